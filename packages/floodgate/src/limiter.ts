import type { Algorithm } from './core/algorithm.js';
import { systemClock, type Clock } from './core/clock.js';
import type { Decision } from './core/decision.js';
import { FloodgateError } from './core/errors.js';
import { isTimers, systemTimers, type Timers } from './core/timers.js';
import { requireObject } from './core/validate.js';
import { MemoryStore } from './stores/memory-store.js';
import { invalidKey, isKey, type PolicyStore, type Store, type SyncPolicyStore } from './stores/store.js';
import { AcquireQueues, type AcquireOptions } from './waiting/acquire-queue.js';
import { checkQueueBound } from './waiting/validate.js';

/** LimiterOptions configures a {@link Limiter}. */
export interface LimiterOptions {
  /** The policy every key is held to, e.g. `tokenBucket({ capacity: 10, refillPerSecond: 5 })`. */
  policy: Algorithm;
  /** Where key state lives (default: a new {@link MemoryStore}). */
  store?: Store;
  /** Source of the current time (default {@link systemClock}); stores with their own clock ignore it. */
  clock?: Clock;
  /**
   * Timers that {@link Limiter.acquire} waits on: default the `clock` itself when it is also
   * {@link Timers} (a {@link ManualClock} is), else {@link systemTimers}. There is at most one
   * timer per key with waiters, and none while nobody waits.
   */
  timers?: Timers;
  /**
   * Most {@link Limiter.acquire} calls that may wait on one key at once (default Infinity); one
   * more is refused at once with `QUEUE_FULL`. 0 means no call waits: each passes now or is refused.
   */
  maxQueue?: number;
}

/** ConsumeOptions are the per-request options of {@link Limiter.consume}. */
export interface ConsumeOptions {
  /** The request's weight (default 1): any finite number from 0 to the policy's limit. */
  cost?: number;
}

/**
 * Limiter applies one policy to many keys through a store. Every method has a promise form that
 * works with any store, and a `...Sync` form for synchronous stores (the memory store) that
 * decides with no promise at all.
 *
 * A rejected request spends nothing.
 *
 * @example
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }) });
 * const decision = limiter.consumeSync(clientIp);
 * if (!decision.allowed) reply(429, { 'retry-after': Math.ceil(decision.retryAfterMs / 1000) });
 */
export class Limiter {
  /** policy is the algorithm this limiter applies. */
  readonly policy: Algorithm;
  /** table is the store's state table for this policy. */
  readonly table: PolicyStore;
  private readonly clock: Clock;
  /** Whether consume and peek may skip reading the clock: the store owns its clock and ours is the system's. */
  private readonly clockFree: boolean;
  /** The table again when it is synchronous, else undefined (checked once, not per call). */
  private readonly syncTable: SyncPolicyStore | undefined;
  private readonly timers: Timers;
  private readonly maxQueue: number;
  /** The lines of {@link acquire} callers, made on first use. */
  private waiting: AcquireQueues | undefined;

  constructor(options: LimiterOptions) {
    const o = requireObject<LimiterOptions>(options, 'Limiter');
    if (typeof o.policy !== 'object' || o.policy === null || typeof o.policy.consume !== 'function') {
      throw new FloodgateError('INVALID_OPTION', 'Limiter.policy must be an algorithm, e.g. tokenBucket({ capacity: 10, refillPerSecond: 5 })', 'Limiter.policy');
    }
    this.policy = o.policy;
    this.clock = o.clock ?? systemClock;
    this.table = (o.store ?? new MemoryStore()).bind(o.policy);
    this.syncTable = this.table.synchronous ? (this.table as SyncPolicyStore) : undefined;
    this.clockFree = this.table.ownsClock === true && this.clock === systemClock;
    if (o.timers !== undefined && !isTimers(o.timers)) {
      throw new FloodgateError('INVALID_OPTION', 'Limiter.timers must have setTimer and clearTimer, like systemTimers or a ManualClock', 'Limiter.timers');
    }
    this.timers = o.timers ?? (isTimers(this.clock) ? this.clock : systemTimers);
    this.maxQueue = checkQueueBound(o.maxQueue, 'Limiter.maxQueue', Infinity);
  }

  /**
   * acquire resolves once a request of `options.cost` (default 1) on `key` is admitted and
   * charged, waiting as long as it must, up to `options.maxWaitMs`. Callers waiting on one key
   * are admitted first in, first out; a newcomer never overtakes them.
   *
   * On a token bucket, leaky bucket or GCRA each caller books its future slot on arrival, so it
   * knows at once whether it can be served within `maxWaitMs` and is admitted at its slot with no
   * retry. On window policies the first in line retries when the window allows, alone. With a
   * remote store (Redis books on its own clock) a caller is released when its slot has surely
   * come: never before it, at most the reply's return trip after it.
   *
   * It rejects with a {@link FloodgateError}, and never charges a caller it rejects:
   * `WAIT_TIMEOUT` when the wait would exceed (or has exceeded) `maxWaitMs`; `ABORTED` when
   * `options.signal` fires (the signal's reason is the error's `cause`); `QUEUE_FULL` when the
   * caller cannot pass at once and `maxQueue` callers already wait on the key; `INVALID_COST` or
   * `COST_EXCEEDS_LIMIT` for a cost the policy can never admit.
   *
   * @example
   * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }), maxQueue: 100 });
   * await limiter.acquire(`api:${userId}`, { maxWaitMs: 2000, signal: request.signal });
   * return callUpstream();   // a burst of 10, then 5 per second, in arrival order
   */
  acquire(key: string, options?: AcquireOptions): Promise<void> {
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.acquire'));
    this.waiting ??= new AcquireQueues({ policy: this.policy, table: this.table, clock: this.clock, timers: this.timers, maxQueue: this.maxQueue });
    return this.waiting.acquire(key, options);
  }

  /** consume resolves to the decision for a request of `options.cost` (default 1) on `key`, charging it when admitted. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision> {
    // Not async: an asynchronous store's promise is handed back as it is (Promise.resolve returns
    // a native promise unchanged), without the extra turns an async wrapper would add.
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.consume'));
    try {
      return Promise.resolve(this.table.consume(key, options?.cost ?? 1, this.clockFree ? NaN : this.clock.now()));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** consumeSync returns the decision for a request on `key` with no promise; needs a synchronous store. */
  consumeSync(key: string, options?: ConsumeOptions): Decision {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.consumeSync');
    return this.sync().consume(key, options?.cost ?? 1, this.clock.now());
  }

  /** peek resolves to what {@link consume} would answer now, without charging. */
  peek(key: string, options?: ConsumeOptions): Promise<Decision> {
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.peek'));
    try {
      return Promise.resolve(this.table.peek(key, options?.cost ?? 1, this.clockFree ? NaN : this.clock.now()));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** peekSync returns what {@link consumeSync} would answer now, without charging. */
  peekSync(key: string, options?: ConsumeOptions): Decision {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.peekSync');
    return this.sync().peek(key, options?.cost ?? 1, this.clock.now());
  }

  /** refund gives `cost` back to `key` (never above the policy's limit), for example when a request turned out not to count. */
  async refund(key: string, cost: number): Promise<void> {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.refund');
    await this.table.refund(key, cost, this.clock.now());
  }

  /** refundSync is {@link refund} with no promise; needs a synchronous store. */
  refundSync(key: string, cost: number): void {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.refundSync');
    this.sync().refund(key, cost, this.clock.now());
  }

  /** reset forgets `key`, so its next request is treated as a fresh key's. */
  async reset(key: string): Promise<void> {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.reset');
    await this.table.reset(key);
  }

  /** resetSync is {@link reset} with no promise; needs a synchronous store. */
  resetSync(key: string): void {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.resetSync');
    this.sync().reset(key);
  }

  private sync(): SyncPolicyStore {
    if (this.syncTable === undefined) {
      throw new FloodgateError('STORE_NOT_SYNC', 'this limiter\'s store answers asynchronously: use consume/peek/refund/reset (promises) instead of the ...Sync methods', 'store');
    }
    return this.syncTable;
  }
}
