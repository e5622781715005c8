/**
 * @fastify/rate-limit's in-memory store (`LocalStore`): a fixed-window counter per key in an LRU,
 * answering through a callback called synchronously. The plugin decides `current <= max`; the
 * bench does the same. One hot key only: its LRU (default 5000 keys) is not meant to hold 1M.
 */

import LocalStore, { type IncrCallback } from '@fastify/rate-limit/store/LocalStore.js';
import type { Subject } from '../support/types.js';
import { HOT_KEY, HUGE, WINDOW_MS } from './settings.js';

export const subject: Subject = {
  library: '@fastify/rate-limit',
  note: 'LocalStore.incr(key, cb, window, max), callback called synchronously',
  hotKey: {
    sync(regime) {
      const store = new LocalStore(false, false);
      const max = regime === 'admit' ? HUGE : 1;
      let admitted = 0;
      const cb: IncrCallback = (err, res) => {
        if (err === null && res.current <= max) admitted++;
      };
      if (regime === 'reject') store.incr(HOT_KEY, cb, WINDOW_MS, max);
      return (n) => {
        admitted = 0;
        for (let i = 0; i < n; i++) store.incr(HOT_KEY, cb, WINDOW_MS, max);
        return admitted;
      };
    },
  },
  manyKeys: {},
};
