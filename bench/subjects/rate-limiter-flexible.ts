/**
 * rate-limiter-flexible's `RateLimiterMemory`: `await limiter.consume(key)` resolves when admitted
 * and rejects (with a `RateLimiterRes`) when over the limit; the bench catches the rejection, as a
 * middleware would. A fixed window per key; each new key arms a timer that deletes it at expiry.
 */

import { RateLimiterMemory } from 'rate-limiter-flexible';
import { keyFor } from '../support/keys.js';
import type { ManyKeysRun, Subject } from '../support/types.js';
import { HOT_KEY, HUGE, MANY_LIMIT, MANY_WINDOW_MS, WINDOW_MS } from './settings.js';

function manyKeys(): ManyKeysRun {
  const limiter = new RateLimiterMemory({ points: MANY_LIMIT, duration: MANY_WINDOW_MS / 1000 });
  return {
    async fill(n) {
      let admitted = 0;
      for (let i = 0; i < n; i++) {
        try {
          await limiter.consume(keyFor(i));
          admitted++;
        } catch {
          // refused
        }
      }
      return admitted;
    },
    async update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) {
        try {
          await limiter.consume(keys[i]!);
          admitted++;
        } catch {
          // refused
        }
      }
      return admitted;
    },
    // Not public API: the Map inside its MemoryStorage.
    size: () =>
      (limiter as unknown as { _memoryStorage?: { _storage?: Map<string, unknown> } })._memoryStorage?._storage?.size,
  };
}

export const subject: Subject = {
  library: 'rate-limiter-flexible',
  note: 'RateLimiterMemory: await consume(key), rejection caught',
  hotKey: {
    promise(regime) {
      const limiter = new RateLimiterMemory({ points: regime === 'admit' ? HUGE : 1, duration: WINDOW_MS / 1000 });
      // Spend the one point now: consume counts synchronously, before its promise settles.
      if (regime === 'reject') limiter.consume(HOT_KEY).catch(() => undefined);
      return async (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) {
          try {
            await limiter.consume(HOT_KEY);
            admitted++;
          } catch {
            // refused
          }
        }
        return admitted;
      };
    },
  },
  manyKeys: { promise: manyKeys },
};
