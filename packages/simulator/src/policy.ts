import {
  fixedWindow,
  FloodgateError,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from 'floodgate';
import { SimulatorError } from './errors.js';
import type { PolicySpec } from './scenario.js';

/** LimiterPolicySpec is a {@link PolicySpec} that runs through a `Limiter` and a store. */
export type LimiterPolicySpec = Extract<
  PolicySpec,
  { type: 'token-bucket' | 'leaky-bucket' | 'fixed-window' | 'sliding-window-log' | 'sliding-window-counter' | 'gcra' }
>;

/**
 * PolicyPromise is what a policy promises about any window of `windowMs` on one key: never more than
 * `maxAdmitted` admitted in it, and (when `guaranteed` is set) never a refusal while the window
 * holds less than `guaranteed - cost` admitted. `limit` is the policy's nominal limit per window,
 * drawn as the limit line.
 */
export interface PolicyPromise {
  readonly windowMs: number;
  readonly maxAdmitted: number;
  readonly guaranteed: number | undefined;
  readonly limit: number;
}

/**
 * buildAlgorithm returns the library's algorithm for `spec`, holding `share` (default 1) of its
 * limit and rate, as a node's local fallback does. The library's factory checks the numbers; its
 * `FloodgateError` comes back as an `INVALID_SCENARIO` error naming `path` and the option.
 */
export function buildAlgorithm(spec: LimiterPolicySpec, path: string, share = 1): Algorithm {
  try {
    return factory(spec, share);
  } catch (error) {
    throw scenarioErrorOf(error, path);
  }
}

/**
 * scenarioErrorOf returns `error` as an `INVALID_SCENARIO` {@link SimulatorError} naming the
 * option under `path` when it is the library's `FloodgateError` about an option (a value the
 * library refuses), and `error` itself otherwise.
 */
export function scenarioErrorOf(error: unknown, path: string): unknown {
  if (!(error instanceof FloodgateError) || error.code !== 'INVALID_OPTION') return error;
  const option = error.option?.split('.').pop();
  const field = option === undefined ? path : `${path}.${option}`;
  return new SimulatorError('INVALID_SCENARIO', `scenario field ${field}: ${error.message}`, field, { cause: error });
}

function factory(spec: LimiterPolicySpec, share: number): Algorithm {
  switch (spec.type) {
    case 'token-bucket':
      return tokenBucket({ capacity: spec.capacity * share, refillPerSecond: spec.refillPerSecond * share });
    case 'leaky-bucket':
      return leakyBucket({ capacity: spec.capacity * share, leakPerSecond: spec.leakPerSecond * share });
    case 'fixed-window':
      return fixedWindow({ limit: spec.limit * share, windowMs: spec.windowMs });
    case 'sliding-window-log':
      return slidingWindowLog({ limit: Math.max(1, Math.floor(spec.limit * share)), windowMs: spec.windowMs });
    case 'sliding-window-counter':
      return slidingWindowCounter({
        limit: spec.limit * share,
        windowMs: spec.windowMs,
        ...(spec.subWindows === undefined ? {} : { subWindows: spec.subWindows }),
      });
    case 'gcra':
      return gcra({
        rate: spec.rate * share,
        periodMs: spec.periodMs,
        maxBurst: Math.max(0, Math.round((spec.maxBurst + 1) * share) - 1),
      });
  }
}

/**
 * promiseOf returns what `spec` promises per window: a fixed window or a sliding counter at most
 * twice its limit in any window (a window straddles two counted ones), the sliding log its limit;
 * a bucket or GCRA of burst b and rate r, over the window b / r, at most b + r × window (2b) and
 * never a refusal below b. The queueing policies promise their outflow rate over one second.
 */
export function promiseOf(spec: PolicySpec): PolicyPromise {
  switch (spec.type) {
    case 'fixed-window':
    case 'sliding-window-counter':
      return { windowMs: spec.windowMs, maxAdmitted: 2 * spec.limit, guaranteed: spec.limit, limit: spec.limit };
    case 'sliding-window-log':
      return { windowMs: spec.windowMs, maxAdmitted: spec.limit, guaranteed: spec.limit, limit: spec.limit };
    case 'token-bucket':
      return bucketPromise(spec.capacity, spec.refillPerSecond / 1000);
    case 'leaky-bucket':
      return bucketPromise(spec.capacity, spec.leakPerSecond / 1000);
    case 'gcra':
      return bucketPromise(spec.maxBurst + 1, spec.rate / spec.periodMs);
    case 'shaping-queue':
      // Turns are intervalMs apart, each rounded up to a whole ms: one more may fall in a window.
      return {
        windowMs: 1000,
        maxAdmitted: Math.floor(1000 / spec.intervalMs) + 1,
        guaranteed: undefined,
        limit: 1000 / spec.intervalMs,
      };
    case 'smooth-bursty':
      // Stored permits (maxBurstSeconds' worth), a second's rate, and the one whose cost the next pays.
      return {
        windowMs: 1000,
        maxAdmitted: Math.ceil(spec.permitsPerSecond * (1 + spec.maxBurstSeconds)) + 1,
        guaranteed: undefined,
        limit: spec.permitsPerSecond,
      };
    case 'smooth-warming-up':
      return {
        windowMs: 1000,
        maxAdmitted: Math.ceil(spec.permitsPerSecond) + 1,
        guaranteed: undefined,
        limit: spec.permitsPerSecond,
      };
  }
}

function bucketPromise(burst: number, perMs: number): PolicyPromise {
  const windowMs = burst / perMs;
  return { windowMs, maxAdmitted: burst + perMs * windowMs, guaranteed: burst, limit: burst };
}

/** describePolicy returns a one-line description of `spec`, e.g. `fixed-window limit 100 per 1000 ms`. */
export function describePolicy(spec: PolicySpec): string {
  switch (spec.type) {
    case 'token-bucket':
      return `token-bucket capacity ${spec.capacity}, ${spec.refillPerSecond}/s`;
    case 'leaky-bucket':
      return `leaky-bucket capacity ${spec.capacity}, ${spec.leakPerSecond}/s`;
    case 'fixed-window':
    case 'sliding-window-log':
      return `${spec.type} limit ${spec.limit} per ${spec.windowMs} ms`;
    case 'sliding-window-counter':
      return `${spec.type} limit ${spec.limit} per ${spec.windowMs} ms${spec.subWindows === undefined ? '' : `, ${spec.subWindows} sub-windows`}`;
    case 'gcra':
      return `gcra ${spec.rate} per ${spec.periodMs} ms, burst ${spec.maxBurst}`;
    case 'shaping-queue':
      return `shaping-queue one per ${spec.intervalMs} ms, ${spec.capacity} waiting`;
    case 'smooth-bursty':
      return `smooth-bursty ${spec.permitsPerSecond}/s, ${spec.maxBurstSeconds} s stored`;
    case 'smooth-warming-up':
      return `smooth-warming-up ${spec.permitsPerSecond}/s after ${spec.warmupMs} ms, cold x${spec.coldFactor}`;
  }
}
