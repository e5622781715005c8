/** Policies from config: each config policy becomes the library's own algorithm. */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from 'floodgate';
import type { PolicyConfig } from './schema.js';
import type { SmoothPolicyConfig } from './smooth-schema.js';

/** CountedPolicyConfig is a policy that counts requests against a limit (every one but the smooth ones). */
export type CountedPolicyConfig = Exclude<PolicyConfig, SmoothPolicyConfig>;

/**
 * policyOf returns the library algorithm a config policy names.
 *
 * @throws FloodgateError `INVALID_OPTION` when the library refuses the numbers (e.g. a log limit above its maximum).
 */
export function policyOf(config: CountedPolicyConfig): Algorithm {
  switch (config.algorithm) {
    case 'tokenBucket':
      return tokenBucket({ capacity: config.capacity, refillPerSecond: config.refillPerSecond });
    case 'leakyBucket':
      return leakyBucket({ capacity: config.capacity, leakPerSecond: config.leakPerSecond });
    case 'fixedWindow':
      return fixedWindow({ limit: config.limit, windowMs: config.windowMs });
    case 'slidingWindowLog':
      return slidingWindowLog({ limit: config.limit, windowMs: config.windowMs });
    case 'slidingWindowCounter':
      return slidingWindowCounter({
        limit: config.limit,
        windowMs: config.windowMs,
        ...(config.subWindows === undefined ? {} : { subWindows: config.subWindows }),
      });
    case 'gcra':
      return gcra({ rate: config.rate, periodMs: config.periodMs, maxBurst: config.maxBurst ?? 0 });
  }
}
