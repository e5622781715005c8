/**
 * express-rate-limit's `MemoryStore`: a fixed-window hit counter per key, `await store.increment(key)`
 * (the store is async only). The middleware decides `totalHits <= limit`; the bench does the same,
 * so admitting and rejecting cost the store the same work.
 */

import { MemoryStore, type Options } from 'express-rate-limit';
import { keyFor } from '../support/keys.js';
import type { ManyKeysRun, Subject } from '../support/types.js';
import { HOT_KEY, HUGE, MANY_LIMIT, MANY_WINDOW_MS, WINDOW_MS } from './settings.js';

function memoryStore(windowMs: number): MemoryStore {
  const store = new MemoryStore();
  // init() reads only windowMs from the middleware's options.
  store.init({ windowMs } as Options);
  return store;
}

function manyKeys(): ManyKeysRun {
  const store = memoryStore(MANY_WINDOW_MS);
  return {
    async fill(n) {
      let admitted = 0;
      for (let i = 0; i < n; i++) if ((await store.increment(keyFor(i))).totalHits <= MANY_LIMIT) admitted++;
      return admitted;
    },
    async update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) if ((await store.increment(keys[i]!)).totalHits <= MANY_LIMIT) admitted++;
      return admitted;
    },
    // Keys live in two maps (this window and the previous one); none has expired during the run.
    size: () => store.current.size + store.previous.size,
  };
}

export const subject: Subject = {
  library: 'express-rate-limit',
  note: 'MemoryStore: await increment(key), then totalHits <= limit',
  hotKey: {
    promise(regime) {
      const store = memoryStore(WINDOW_MS);
      const limit = regime === 'admit' ? HUGE : 1;
      // Spend the one request now: increment counts synchronously, before its promise settles.
      if (regime === 'reject') void store.increment(HOT_KEY);
      return async (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if ((await store.increment(HOT_KEY)).totalHits <= limit) admitted++;
        return admitted;
      };
    },
  },
  manyKeys: { promise: manyKeys },
};
