import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';

/**
 * EXACT_LIMIT is what each of {@link exactPolicies} admits during a test run: every policy is
 * slow enough (refill far below one unit per run, windows far longer than a run and not about to
 * roll over) that its allowance in the run is exactly its limit.
 */
export const EXACT_LIMIT = 120;

const longMs = 1_000_000_000_000; // windows of about 31.7 years, aligned to the epoch: the next edge is in 2033

/** exactPolicies are one of each algorithm, each admitting exactly {@link EXACT_LIMIT} in a run. */
export const exactPolicies: Readonly<Record<string, Algorithm>> = {
  tokenBucket: tokenBucket({ capacity: EXACT_LIMIT, refillPerSecond: 0.001 }),
  leakyBucket: leakyBucket({ capacity: EXACT_LIMIT, leakPerSecond: 0.001 }),
  fixedWindow: fixedWindow({ limit: EXACT_LIMIT, windowMs: longMs }),
  slidingWindowLog: slidingWindowLog({ limit: EXACT_LIMIT, windowMs: 3_600_000 }),
  weighted: slidingWindowCounter({ limit: EXACT_LIMIT, windowMs: longMs }),
  subWindows: slidingWindowCounter({ limit: EXACT_LIMIT, windowMs: longMs, subWindows: 10 }),
  gcra: gcra({ rate: 1, periodMs: 3_600_000, maxBurst: EXACT_LIMIT - 1 }),
};

/** ALL_OR_NOTHING_LIMIT is what {@link allOrNothing} admits together: the smaller of its limits. */
export const ALL_OR_NOTHING_LIMIT = 90;

/** allOrNothing are two limits on one key for consumeAll: nothing is spent unless both admit. */
export const allOrNothing: readonly Algorithm[] = [
  tokenBucket({ capacity: 150, refillPerSecond: 0.001 }),
  fixedWindow({ limit: ALL_OR_NOTHING_LIMIT, windowMs: longMs }),
];
