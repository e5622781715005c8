/**
 * floodgate: `limiter.consumeSync(key)` (sync path) and `await limiter.consume(key)` (Promise
 * path), a token bucket in a `MemoryStore`, on the real clock (the default).
 */

import { Limiter, MemoryStore, tokenBucket } from 'floodgate';
import { keyFor } from '../support/keys.js';
import type { ManyKeysRun, Regime, Subject } from '../support/types.js';
import {
  HOT_KEY,
  HUGE,
  HUGE_REFILL_PER_SECOND,
  MANY_LIMIT,
  MANY_REFILL_PER_SECOND,
  TINY_REFILL_PER_SECOND,
} from './settings.js';

function hotLimiter(regime: Regime): Limiter {
  const store = new MemoryStore();
  if (regime === 'admit') {
    return new Limiter({ policy: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }), store });
  }
  const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: TINY_REFILL_PER_SECOND }), store });
  limiter.consumeSync(HOT_KEY);
  return limiter;
}

function manyKeysLimiter(n: number): { limiter: Limiter; store: MemoryStore } {
  // A store sized for the load, as a user expecting n keys would configure it.
  const store = new MemoryStore({ maxKeys: n });
  const limiter = new Limiter({
    policy: tokenBucket({ capacity: MANY_LIMIT, refillPerSecond: MANY_REFILL_PER_SECOND }),
    store,
  });
  return { limiter, store };
}

function manyKeysSync(n: number): ManyKeysRun {
  const { limiter, store } = manyKeysLimiter(n);
  return {
    fill(count) {
      let admitted = 0;
      for (let i = 0; i < count; i++) if (limiter.consumeSync(keyFor(i)).allowed) admitted++;
      return admitted;
    },
    update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) if (limiter.consumeSync(keys[i]!).allowed) admitted++;
      return admitted;
    },
    size: () => store.size,
  };
}

function manyKeysPromise(n: number): ManyKeysRun {
  const { limiter, store } = manyKeysLimiter(n);
  return {
    async fill(count) {
      let admitted = 0;
      for (let i = 0; i < count; i++) if ((await limiter.consume(keyFor(i))).allowed) admitted++;
      return admitted;
    },
    async update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) if ((await limiter.consume(keys[i]!)).allowed) admitted++;
      return admitted;
    },
    size: () => store.size,
  };
}

export const subject: Subject = {
  library: 'floodgate',
  note: 'Limiter + MemoryStore, tokenBucket; consumeSync / await consume',
  hotKey: {
    sync(regime) {
      const limiter = hotLimiter(regime);
      return (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if (limiter.consumeSync(HOT_KEY).allowed) admitted++;
        return admitted;
      };
    },
    promise(regime) {
      const limiter = hotLimiter(regime);
      return async (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if ((await limiter.consume(HOT_KEY)).allowed) admitted++;
        return admitted;
      };
    },
  },
  manyKeys: { sync: manyKeysSync, promise: manyKeysPromise },
};
