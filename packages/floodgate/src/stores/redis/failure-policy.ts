import type { Algorithm } from '../../core/algorithm.js';
import type { Clock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import { notify, type Observer, type StoreErrorEvent } from '../../core/events.js';
import { FloodgateError, describeValue } from '../../core/errors.js';
import { MemoryStore, type MemoryTable } from '../memory-store.js';

/**
 * LocalFallback is the failure policy that decides locally while Redis is away: each process runs
 * the policy in memory with its share of the limit (and of its rate). The share is `share` when
 * given, else `1 / nodes`, else one over the number of processes seen on the store recently (each
 * store beats on Redis every few seconds; see {@link RedisStoreOptions}). With the right share the
 * fleet admits, over an outage, at most what the policy admits to a fresh key over that time: the
 * local buckets start full, so at most one limit more than Redis would have allowed. The local
 * limiter keeps its state from one outage to the next, so lapses in a row (a Redis that stalls for
 * a few hundred ms now and then) go on from what they spent, and together admit no more than one
 * outage as long as all of them.
 * What the fallback admits is charged to Redis when it answers again (the store's `writeBack`).
 *
 * `{ fallback: 'local' }` is every store's default `onError`.
 */
export interface LocalFallback {
  readonly fallback: 'local';
  /** The part of the policy's limit and rate each process admits on its own, above 0 and at most 1 (default `1 / nodes`). */
  readonly share?: number;
  /** How many processes share the limits, when known (default: the processes seen on the store recently). */
  readonly nodes?: number;
  /** Most keys the local limiter holds (default 100,000); a new key beyond that is refused (`store-full`). */
  readonly maxKeys?: number;
}

/**
 * OnError is what a {@link RedisStore} does when Redis fails (an error, no answer within the
 * timeout, or the circuit open after repeated failures):
 *
 * - {@link LocalFallback} (the default, `{ fallback: 'local' }`): decide in this process with its
 *   share of the limit; `reason: 'fallback'` on every decision it makes (allowed or not). The
 *   over-admission of an outage is bounded, and what was admitted is written back.
 * - `'fail-open'`: admit everything; the decision says `reason: 'fail-open'` with `remaining` 0
 *   (unknown). Unbounded while Redis is away; what it admitted is written back too.
 * - `'throw'`: the operation rejects with `STORE_ERROR` or `STORE_TIMEOUT`.
 * - `'fail-closed'`: refuse; `reason: 'fail-closed'`, `retryAfterMs` until the next probe of Redis.
 *
 * Under every policy but `'throw'`, a failed `refund` resolves without error (a lost refund only
 * makes the limit stricter), `reserve` admits (open), refuses (closed) or books locally, and a
 * failed `reset` still rejects, since the caller must know the key was not forgotten.
 */
export type OnError = 'throw' | 'fail-open' | 'fail-closed' | LocalFallback;

/** DEFAULT_ON_ERROR is every store's default {@link OnError}: the bounded local fallback, its share from the processes seen. */
export const DEFAULT_ON_ERROR: LocalFallback = Object.freeze({ fallback: 'local' });

/** checkOnError returns `value` when it is an {@link OnError}, else throws `INVALID_OPTION` naming `option`. */
export function checkOnError(value: unknown, option: string): OnError {
  if (value === 'throw' || value === 'fail-open' || value === 'fail-closed') return value;
  const local = value as Partial<LocalFallback> | null;
  if (typeof local === 'object' && local !== null && local.fallback === 'local') {
    const { share, nodes } = local;
    const maxKeys = local.maxKeys ?? 100_000;
    const shareOk = share === undefined || (typeof share === 'number' && share > 0 && share <= 1);
    const nodesOk = nodes === undefined || (Number.isSafeInteger(nodes) && nodes >= 1);
    if (share !== undefined && nodes !== undefined) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `${option}: give share or nodes, not both (share is 1 / nodes)`,
        option,
      );
    }
    if (shareOk && nodesOk && Number.isSafeInteger(maxKeys) && maxKeys > 0) {
      return {
        fallback: 'local',
        maxKeys,
        ...(share === undefined ? {} : { share }),
        ...(nodes === undefined ? {} : { nodes }),
      };
    }
  }
  throw new FloodgateError(
    'INVALID_OPTION',
    `${option} must be 'throw', 'fail-open', 'fail-closed' or { fallback: 'local' } with an optional share (0 < share <= 1), nodes (a whole number >= 1) or maxKeys, got ${describeValue(value)}`,
    option,
  );
}

/**
 * scaledPolicy returns `algorithm` with `share` of its limit and rate and the same windows, for the
 * local fallback: the algorithm's own {@link Algorithm.scaled}.
 *
 * @throws FloodgateError `INVALID_OPTION` for an algorithm that cannot be scaled (it has no `scaled`).
 */
export function scaledPolicy(algorithm: Algorithm, share: number): Algorithm {
  if (typeof algorithm.scaled !== 'function') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.onError: no local fallback for the algorithm ${JSON.stringify(algorithm.name)}: it has no scaled(share)`,
      'RedisStore.onError',
    );
  }
  return algorithm.scaled(share);
}

/** FailurePolicyOptions configures a {@link FailurePolicy}. */
export interface FailurePolicyOptions {
  readonly onError: OnError;
  readonly algorithm: Algorithm;
  /** When Redis will next be tried for the user's `key`, in ms (the circuit guarding it: on a cluster, its node's). */
  readonly retryInMs: (key: string) => number;
  /** The local time, for the fallback when the caller passed none (`nowMs` NaN) and for events. */
  readonly clock: Clock;
  /** Hears `storeError` (with the policy applied) and `fallback` (on and off); undefined: nothing is built. */
  readonly observer: Observer | undefined;
  /** How many processes share the store now (the census), for a fallback with neither share nor nodes. */
  readonly nodes: () => number;
}

/** The `policy` a store error event names for an {@link OnError}. */
function policyName(onError: OnError): StoreErrorEvent['policy'] {
  return typeof onError === 'object' ? 'fallback' : onError;
}

/**
 * FailurePolicy applies one table's {@link OnError} to operations that Redis failed, and reports
 * each failure (`storeError`) and each switch to and from the local fallback (`fallback`).
 */
export class FailurePolicy {
  /** The local limiter: kept from one outage to the next, so that short lapses in a row do not each start from full buckets. */
  private local: MemoryTable | undefined;
  /** The local limiter's policy: this process's share of the limit, as it was when the local limiter was made. */
  private scaled: Algorithm | undefined;
  /** The share the local limiter was made with. */
  private localShare = NaN;
  /** True while the local limiter decides (from a failure to the next answer from Redis). */
  private active = false;
  private readonly onError: OnError;
  private readonly algorithm: Algorithm;

  /** Creates the policy for `algorithm`'s table; a local fallback's scaling is checked now. */
  constructor(private readonly options: FailurePolicyOptions) {
    this.onError = options.onError;
    this.algorithm = options.algorithm;
    if (typeof this.onError === 'object') scaledPolicy(this.algorithm, this.onError.share ?? 1);
  }

  /** decide returns the decision for a consume or peek that Redis failed with `error`, or throws it under `'throw'`. */
  decide(op: 'consume' | 'peek', key: string, cost: number, nowMs: number, error: unknown): Decision {
    this.report(error, this.onError);
    const limit = this.algorithm.limit;
    if (this.onError === 'throw') throw error;
    if (this.onError === 'fail-open')
      return { allowed: true, limit, remaining: 0, retryAfterMs: 0, resetMs: 0, reason: 'fail-open' };
    if (this.onError === 'fail-closed')
      return {
        allowed: false,
        limit,
        remaining: 0,
        retryAfterMs: Math.max(1, this.options.retryInMs(key)),
        resetMs: 0,
        reason: 'fail-closed',
      };
    const table = this.localTable();
    if (cost > this.scaled!.limit)
      return {
        allowed: false,
        limit,
        remaining: 0,
        retryAfterMs: Math.max(1, this.options.retryInMs(key)),
        resetMs: 0,
        reason: 'fallback',
      };
    const atMs = this.localNow(nowMs);
    const d = op === 'consume' ? table.consume(key, cost, atMs) : table.peek(key, cost, atMs);
    return { ...d, limit, reason: 'fallback' };
  }

  /** refund gives `cost` back locally (under a local fallback) and swallows `error`, or throws it under `'throw'`. */
  refund(key: string, cost: number, nowMs: number, error: unknown): void {
    this.report(error, this.onError);
    if (this.onError === 'throw') throw error;
    if (this.active && cost <= this.scaled!.limit) this.local!.refund(key, cost, this.localNow(nowMs));
  }

  /** reserve returns the wait for a reservation Redis failed: 0 (open), -1 (closed), or booked locally. */
  reserve(key: string, cost: number, nowMs: number, maxWaitMs: number, error: unknown): number {
    this.report(error, this.onError);
    if (this.onError === 'throw') throw error;
    if (this.onError === 'fail-open') return 0;
    if (this.onError === 'fail-closed') return -1;
    const table = this.localTable();
    if (cost > this.scaled!.limit) return -1;
    return table.reserve === undefined ? -1 : table.reserve(key, cost, this.localNow(nowMs), maxWaitMs);
  }

  /** rejected reports an error the caller sees whatever the policy (a failed reset, a malformed reply). */
  rejected(error: unknown): void {
    this.report(error, 'throw');
  }

  /**
   * recovered says Redis answered, so it decides again. The local limiter keeps its state: should
   * Redis fail again soon, each key goes on from what this process spent in the last lapse (its
   * buckets refilling meanwhile at their share of the rate) instead of a full bucket, so that
   * lapses in a row admit, together, no more than one outage of their total length would.
   */
  recovered(): void {
    if (!this.active) return;
    this.active = false;
    if (this.options.observer !== undefined)
      notify(this.options.observer, 'fallback', { store: 'redis', active: false, atMs: this.options.clock.now() });
  }

  private localNow(nowMs: number): number {
    return Number.isNaN(nowMs) ? this.options.clock.now() : nowMs;
  }

  private report(error: unknown, onError: OnError): void {
    const observer = this.options.observer;
    if (observer?.storeError === undefined) return;
    const asError = error instanceof Error ? error : new Error(String(error));
    notify(observer, 'storeError', {
      store: 'redis',
      error: asError,
      policy: policyName(onError),
      atMs: this.options.clock.now(),
    });
  }

  /**
   * The local limiter, made at the first failure with this process's share of that moment, and
   * made again only when the share has changed since (the census counted other processes).
   */
  private localTable(): MemoryTable {
    const fallback = this.onError as LocalFallback;
    if (!this.active) {
      this.active = true;
      const share = fallback.share ?? 1 / (fallback.nodes ?? Math.max(1, this.options.nodes()));
      if (this.local === undefined || share !== this.localShare) {
        this.localShare = share;
        this.scaled = scaledPolicy(this.algorithm, share);
        this.local = new MemoryStore({ maxKeys: fallback.maxKeys ?? 100_000 }).bind(this.scaled);
      }
      if (this.options.observer !== undefined)
        notify(this.options.observer, 'fallback', { store: 'redis', active: true, atMs: this.options.clock.now() });
    }
    return this.local!;
  }
}
