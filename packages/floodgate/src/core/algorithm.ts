import type { Decision } from './decision.js';
import { FloodgateError, describeValue } from './errors.js';

/**
 * Algorithm is one rate-limiting rule with its parameters fixed and checked, as made by a factory
 * such as `tokenBucket({ capacity, refillPerSecond })`.
 *
 * Its state for one key is a record of `width` float64 cells, `cells[at]` to `cells[at + width - 1]`.
 * The methods are pure state transitions: they read only their arguments, never a clock, and write
 * only that record. Keeping state as flat cells (not an object per key) is what lets the memory
 * store hold a million keys in a few typed arrays; {@link decide} gives the same rule the plain
 * functional shape `(state, now, cost) -> { state, decision }`.
 *
 * Every method takes `nowMs`; a `nowMs` earlier than times already recorded (a clock going
 * backwards) never creates capacity.
 */
export interface Algorithm {
  /** name is the algorithm's stable kebab-case name, for example `token-bucket`; for people and keys, never dispatched on. */
  readonly name: string;
  /**
   * kind identifies the rule apart from its parameters: one symbol per rule, exported beside its
   * factory (`TOKEN_BUCKET`, `FIXED_WINDOW`, ...). A store that runs rules elsewhere (the Redis
   * store's Lua scripts) finds its implementation by it; an algorithm without one runs in memory only.
   */
  readonly kind?: symbol;
  /**
   * windowMs is how long the policy takes to restore its whole limit from empty, in ms: the window
   * of a window policy, `capacity / rate` for a bucket, `limit` emission intervals for GCRA. It is
   * the quota window (`w`) of the IETF draft's `RateLimit-Policy`; undefined when the policy has none.
   */
  readonly windowMs?: number;
  /** params are the validated parameters, as numbers, for stores and introspection. */
  readonly params: Readonly<Record<string, number>>;
  /** limit is the most cost a fresh key admits at once; decisions report it. */
  readonly limit: number;
  /** width is how many float64 cells one key's state takes. */
  readonly width: number;
  /** init writes the state of a key never seen before (or reset), as of `nowMs`. */
  init(cells: Float64Array, at: number, nowMs: number): void;
  /** consume decides a request of `cost` and charges it only when admitted (check, then charge). */
  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision;
  /** peek answers what `consume` would, without changing the state. */
  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision;
  /** refund gives back up to `cost` units spent earlier; it never raises capacity above the limit. */
  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void;
  /**
   * restAtMs returns the time from which the state answers exactly as a fresh key would, so that
   * a store may forget the key from then on without changing any decision while the clock moves
   * forward. (A clock that later goes back before that time would find a fresh key at an earlier
   * time, in a window the key had spent: the memory store therefore decides a key it does not hold
   * no earlier than the latest rest time of the keys it forgot.)
   */
  restAtMs(cells: Float64Array, at: number): number;
  /** checkCost throws a typed error unless `cost` is one this policy can ever admit. */
  checkCost(cost: number): void;
  /**
   * reserve, on policies that can book the future (token bucket, leaky bucket, GCRA), charges
   * `cost` at once, possibly going into debt, and returns the ms until the request may proceed
   * (0: now). When that wait would exceed `maxWaitMs` it charges nothing and returns -1. A
   * reservation given up is returned with {@link Algorithm.refund}. Window policies have no
   * reserve: a waiter retries after `retryAfterMs`.
   */
  reserve?(cells: Float64Array, at: number, nowMs: number, cost: number, maxWaitMs: number): number;
  /**
   * scaled returns the same rule with `share` (above 0, at most 1) of this policy's limit and rate
   * and the same windows: what one of several processes admits on its own when they share the
   * limit and cannot reach their shared store (a local fallback). Integer limits stay at least 1.
   * Without it, a policy has no local fallback.
   */
  scaled?(share: number): Algorithm;
}

/**
 * checkShare returns `share` when it is a number above 0 and at most 1, else throws
 * `INVALID_OPTION` naming `option`; {@link Algorithm.scaled} implementations call it first.
 */
export function checkShare(share: number, option: string): number {
  if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a number above 0 and at most 1, got ${describeValue(share)}`,
      option,
    );
  }
  return share;
}

/**
 * decide applies one request to a key's state without mutating its input, and returns the next
 * state with the decision. `state` undefined means a key never seen before.
 *
 * @example
 * let state: Float64Array | undefined;
 * ({ state, decision } = decide(tokenBucket({ capacity: 2, refillPerSecond: 1 }), state, 0, 1));
 */
export function decide(
  algorithm: Algorithm,
  state: Float64Array | undefined,
  nowMs: number,
  cost: number,
): { state: Float64Array; decision: Decision } {
  algorithm.checkCost(cost);
  const next = new Float64Array(algorithm.width);
  if (state === undefined) algorithm.init(next, 0, nowMs);
  else next.set(state);
  const decision = algorithm.consume(next, 0, nowMs, cost);
  return { state: next, decision };
}

/**
 * countSlack returns the tolerance for comparing costs and counts under a policy whose limit is
 * `limit`, so float noise never refuses an exact fit: 1e-12 of the limit (at least 1e-12). It is
 * relative because an absolute one would be too coarse for tiny rates (1e-9 of a token that takes
 * 30 days to refill is 2.6 ms) and too fine for huge limits.
 */
export function countSlack(limit: number): number {
  return 1e-12 * Math.max(1, limit);
}
/** Tolerance when comparing times, in ms: below a microsecond, above float64 noise at epoch times. */
export const TIME_EPSILON_MS = 1e-3;
