import type { Algorithm } from '../core/algorithm.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import type { Decision } from '../core/decision.js';

/** MaybePromise is a value, or a promise of it: synchronous stores answer at once. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * PolicyStore holds the state of many keys under one policy and applies that policy's
 * {@link Algorithm} to a key atomically. It does nothing clever: the rule is the algorithm's.
 *
 * `nowMs` is the caller's time. A store that owns its clock (Redis uses the server's `TIME`)
 * may ignore it; the memory store uses it as given.
 */
export interface PolicyStore {
  /** synchronous is true when every method answers without a promise. */
  readonly synchronous: boolean;
  /**
   * ownsClock is true when `consume` and `peek` decide on the store's own clock (Redis's `TIME`)
   * and want local time only in case of failure. A caller on the system clock may then pass `NaN`
   * as `nowMs`, saving a clock read per decision; the store reads the system clock itself when
   * it comes to need local time.
   */
  readonly ownsClock?: boolean;
  /** consume decides a request of `cost` for `key` and charges it only when admitted. */
  consume(key: string, cost: number, nowMs: number): MaybePromise<Decision>;
  /** peek answers what `consume` would, without charging. */
  peek(key: string, cost: number, nowMs: number): MaybePromise<Decision>;
  /** refund gives `cost` back to `key` (never above the policy's limit). */
  refund(key: string, cost: number, nowMs: number): MaybePromise<void>;
  /** reset forgets `key`, so its next request sees a fresh key. */
  reset(key: string): MaybePromise<void>;
  /**
   * reserve books `cost` for `key` now or in the future and returns the ms to wait (0: now), or
   * -1, charging nothing, when the wait would exceed `maxWaitMs`. Present only when the policy
   * can book the future ({@link Algorithm.reserve}).
   */
  reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): MaybePromise<number>;
}

/** SyncPolicyStore is a {@link PolicyStore} whose methods never return promises. */
export interface SyncPolicyStore extends PolicyStore {
  readonly synchronous: true;
  consume(key: string, cost: number, nowMs: number): Decision;
  peek(key: string, cost: number, nowMs: number): Decision;
  refund(key: string, cost: number, nowMs: number): void;
  reset(key: string): void;
  reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): number;
}

/**
 * Store keeps state for limiters. `bind` returns the {@link PolicyStore} for one policy; each
 * limiter binds once, and keys of different policies never share state.
 */
export interface Store {
  /** bind returns the state table for `algorithm`, creating it on first use. */
  bind(algorithm: Algorithm): PolicyStore;
}

/**
 * isKey returns whether `key` is a key any store accepts: a non-empty string. Anything else
 * (`undefined`, a number, `''`) is refused before it reaches a store, so it can never match,
 * charge or reset another key.
 */
export function isKey(key: unknown): key is string {
  return typeof key === 'string' && key.length !== 0;
}

/** invalidKey returns the `INVALID_KEY` error for `key`, naming `where` it was given. */
export function invalidKey(key: unknown, where: string): FloodgateError {
  const what = typeof key === 'string' ? 'an empty string' : describeValue(key);
  return new FloodgateError('INVALID_KEY', `${where}: key must be a non-empty string, got ${what}`, 'key');
}
