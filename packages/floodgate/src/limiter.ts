import type { Algorithm } from './core/algorithm.js';
import { systemClock, type Clock } from './core/clock.js';
import type { Decision } from './core/decision.js';
import { FloodgateError } from './core/errors.js';
import { requireObject } from './core/validate.js';
import { MemoryStore } from './stores/memory-store.js';
import type { PolicyStore, Store, SyncPolicyStore } from './stores/store.js';

/** LimiterOptions configures a {@link Limiter}. */
export interface LimiterOptions {
  /** The policy every key is held to, e.g. `tokenBucket({ capacity: 10, refillPerSecond: 5 })`. */
  policy: Algorithm;
  /** Where key state lives (default: a new {@link MemoryStore}). */
  store?: Store;
  /** Source of the current time (default {@link systemClock}); stores with their own clock ignore it. */
  clock?: Clock;
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
  /** The table again when it is synchronous, else undefined (checked once, not per call). */
  private readonly syncTable: SyncPolicyStore | undefined;

  constructor(options: LimiterOptions) {
    const o = requireObject<LimiterOptions>(options, 'Limiter');
    if (typeof o.policy !== 'object' || o.policy === null || typeof o.policy.consume !== 'function') {
      throw new FloodgateError('INVALID_OPTION', 'Limiter.policy must be an algorithm, e.g. tokenBucket({ capacity: 10, refillPerSecond: 5 })', 'Limiter.policy');
    }
    this.policy = o.policy;
    this.clock = o.clock ?? systemClock;
    this.table = (o.store ?? new MemoryStore()).bind(o.policy);
    this.syncTable = this.table.synchronous ? (this.table as SyncPolicyStore) : undefined;
  }

  /** consume resolves to the decision for a request of `options.cost` (default 1) on `key`, charging it when admitted. */
  async consume(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.table.consume(key, options?.cost ?? 1, this.clock.now());
  }

  /** consumeSync returns the decision for a request on `key` with no promise; needs a synchronous store. */
  consumeSync(key: string, options?: ConsumeOptions): Decision {
    return this.sync().consume(key, options?.cost ?? 1, this.clock.now());
  }

  /** peek resolves to what {@link consume} would answer now, without charging. */
  async peek(key: string, options?: ConsumeOptions): Promise<Decision> {
    return this.table.peek(key, options?.cost ?? 1, this.clock.now());
  }

  /** peekSync returns what {@link consumeSync} would answer now, without charging. */
  peekSync(key: string, options?: ConsumeOptions): Decision {
    return this.sync().peek(key, options?.cost ?? 1, this.clock.now());
  }

  /** refund gives `cost` back to `key` (never above the policy's limit), for example when a request turned out not to count. */
  async refund(key: string, cost: number): Promise<void> {
    await this.table.refund(key, cost, this.clock.now());
  }

  /** refundSync is {@link refund} with no promise; needs a synchronous store. */
  refundSync(key: string, cost: number): void {
    this.sync().refund(key, cost, this.clock.now());
  }

  /** reset forgets `key`, so its next request is treated as a fresh key's. */
  async reset(key: string): Promise<void> {
    await this.table.reset(key);
  }

  /** resetSync is {@link reset} with no promise; needs a synchronous store. */
  resetSync(key: string): void {
    this.sync().reset(key);
  }

  private sync(): SyncPolicyStore {
    if (this.syncTable === undefined) {
      throw new FloodgateError('STORE_NOT_SYNC', 'this limiter\'s store answers asynchronously: use consume/peek/refund/reset (promises) instead of the ...Sync methods', 'store');
    }
    return this.syncTable;
  }
}
