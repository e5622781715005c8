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
  /**
   * decidesFailures is true when the store applies its own deadline and failure policy (Redis's
   * `timeoutMs` and `onError`): its answers already say `fail-open`, `fail-closed` or `fallback`,
   * and a {@link Limiter} adds no deadline or failure policy of its own.
   */
  readonly decidesFailures?: boolean;
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
  /**
   * release undoes one `bind` of `algorithm`, so that the store may drop the table once nobody
   * binds it (the memory store does). Optional: stores without it keep their tables.
   */
  release?(algorithm: Algorithm): void;
  /**
   * consumeAll, on stores that can, decides several requests on this store together and charges
   * them only when every one is admitted (Redis: one script per hash slot). `nowMs` is the
   * caller's time, read only by stores that do not own their clock.
   */
  consumeAll?(requests: readonly StoreRequest[], nowMs?: number): Promise<StoreConsumeAllResult>;
}

/** StoreRequest is one request of {@link Store.consumeAll}: a policy, a key, a cost (default 1). */
export interface StoreRequest {
  readonly policy: Algorithm;
  readonly key: string;
  readonly cost?: number;
}

/**
 * StoreConsumeAllResult is the answer of {@link Store.consumeAll}: `allowed` when every request was
 * admitted and charged, else nothing stays charged; `decisions[i]` answers request i.
 */
export interface StoreConsumeAllResult {
  readonly allowed: boolean;
  readonly decisions: readonly Decision[];
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
