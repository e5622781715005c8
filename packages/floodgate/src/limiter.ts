import type { Algorithm } from './core/algorithm.js';
import { systemClock, type Clock } from './core/clock.js';
import type { Decision } from './core/decision.js';
import { FloodgateError } from './core/errors.js';
import { notify, type Observer } from './core/events.js';
import type { Timers } from './core/timers.js';
import { limiterParts, type LimiterOptions } from './limiter-options.js';
import {
  invalidKey,
  isKey,
  type MaybePromise,
  type PolicyStore,
  type Store,
  type SyncPolicyStore,
} from './stores/store.js';
import { AcquireQueues, type AcquireOptions } from './waiting/acquire-queue.js';
import { isThenable } from './waiting/key-queue.js';

export type { LimiterOptions } from './limiter-options.js';

/** ConsumeOptions are the per-request options of {@link Limiter.consume}. */
export interface ConsumeOptions {
  /** The request's weight (default 1): any finite number from 0 to the policy's limit. */
  cost?: number;
}

/** LIMITER_BRAND marks every {@link Limiter}, so that a multi-limit decision tells one from a look-alike cheaply. */
export const LIMITER_BRAND: unique symbol = Symbol('floodgate.Limiter');

/**
 * isLimiter tells a {@link Limiter} by a brand field its constructor sets: as exact as
 * `instanceof` for our purpose (a clear error for a wrong argument), and measured about 10% of a
 * two-limit decision cheaper, since `instanceof` on an imported class is not folded here.
 */
export function isLimiter(value: unknown): value is Limiter {
  return typeof value === 'object' && value !== null && (value as { [LIMITER_BRAND]?: true })[LIMITER_BRAND] === true;
}

/**
 * Limiter applies one policy to many keys through a store. Every method has a promise form that
 * works with any store, and a `...Sync` form for synchronous stores (the memory store) that
 * decides with no promise at all.
 *
 * A rejected request spends nothing. A key must be a non-empty string: anything else is refused
 * with `INVALID_KEY` before the store sees it. An asynchronous store's failures and silences are
 * answered by `onError` (default fail-open) within `timeoutMs` (see {@link LimiterOptions}).
 * Decisions go to `observer.decision` when one is given; with none, nothing is built.
 *
 * @example
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }) });
 * const decision = limiter.consumeSync(clientIp);
 * if (!decision.allowed) reply(429, { 'retry-after': Math.ceil(decision.retryAfterMs / 1000) });
 */
export class Limiter {
  /** policy is the algorithm this limiter applies. */
  readonly policy: Algorithm;
  /** store is the store this limiter's policy is bound to. */
  readonly store: Store;
  /** table is the store's state table for this policy (behind the deadline and `onError` for an asynchronous store). */
  readonly table: PolicyStore;
  /** name is what this limiter's events carry (`LimiterOptions.name`, default the policy's name). */
  readonly name: string;
  /** observer receives this limiter's events; undefined when none was given. */
  readonly observer: Observer | undefined;
  /** reportKeys is whether events carry keys. */
  readonly reportKeys: boolean;
  /** The observer when it has a `decision` hook, else undefined: the one check a decision pays. */
  private readonly watcher: Observer | undefined;
  /** hasDecisionObserver is whether decisions are reported (the observer has a `decision` hook). */
  readonly hasDecisionObserver: boolean;
  /** The brand `LIMITER_BRAND`, which marks every limiter: always true. */
  readonly [LIMITER_BRAND] = true;
  /** clock is the clock this limiter reads (`LimiterOptions.clock`). */
  readonly clock: Clock;
  /** Whether consume and peek may skip reading the clock: the store owns its clock and ours is the system's. */
  private readonly clockFree: boolean;
  /** The table again when it is synchronous, else undefined (checked once, not per call). */
  private syncTable: SyncPolicyStore | undefined;
  /** The table calls go to: {@link table} until {@link close}. */
  private active: PolicyStore;
  private readonly timers: Timers;
  private readonly maxQueue: number;
  private closed = false;
  /** The lines of {@link acquire} callers, made on first use. */
  private waiting: AcquireQueues | undefined;

  constructor(options: LimiterOptions) {
    const parts = limiterParts(options);
    this.policy = parts.policy;
    this.store = parts.store;
    this.table = parts.table;
    this.active = parts.table;
    this.name = parts.name;
    this.observer = parts.observer;
    this.reportKeys = parts.reportKeys;
    this.watcher = typeof parts.observer?.decision === 'function' ? parts.observer : undefined;
    this.hasDecisionObserver = this.watcher !== undefined;
    this.clock = parts.clock;
    this.timers = parts.timers;
    this.maxQueue = parts.maxQueue;
    this.syncTable = this.table.synchronous ? (this.table as SyncPolicyStore) : undefined;
    this.clockFree = this.table.ownsClock === true && this.clock === systemClock;
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
   * `COST_EXCEEDS_LIMIT` for a cost the policy can never admit. The observer's `queue` hook sees
   * each line's depth change.
   *
   * @example
   * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }), maxQueue: 100 });
   * await limiter.acquire(`api:${userId}`, { maxWaitMs: 2000, signal: request.signal });
   * return callUpstream();   // a burst of 10, then 5 per second, in arrival order
   */
  acquire(key: string, options?: AcquireOptions): Promise<void> {
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.acquire'));
    if (this.closed) return Promise.reject(closedError());
    this.waiting ??= new AcquireQueues({
      policy: this.policy,
      table: this.active,
      clock: this.clock,
      timers: this.timers,
      maxQueue: this.maxQueue,
      depthChanged: typeof this.observer?.queue === 'function' ? this.depthReporter(this.observer) : undefined,
    });
    return this.waiting.acquire(key, options);
  }

  /** consume resolves to the decision for a request of `options.cost` (default 1) on `key`, charging it when admitted. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision> {
    const table = this.syncTable;
    if (table !== undefined && this.watcher === undefined) return this.consumeNow(table, key, options);
    return this.consumeThrough(key, options);
  }

  /**
   * consumeThrough is {@link consume} on any store, with or without an observer. It is apart so
   * that `consume` stays small: V8 inlines a limited number of bytecodes into a caller's loop, and
   * those are better spent on the synchronous store's path.
   */
  private consumeThrough(key: string, options?: ConsumeOptions): Promise<Decision> {
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.consume'));
    const cost = options?.cost ?? 1;
    const nowMs = this.clockFree ? NaN : this.clock.now();
    let answer: MaybePromise<Decision>;
    try {
      answer = this.active.consume(key, cost, nowMs);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    // Not async: an asynchronous store's promise is handed back as it is (Promise.resolve returns
    // a native promise unchanged), without the extra turns an async wrapper would add.
    return this.watcher === undefined ? Promise.resolve(answer) : this.reported('consume', key, cost, answer, nowMs);
  }

  /**
   * consumeNow is {@link consume} on a synchronous store with no observer: an async function, where
   * the general path is not, since V8 settles an async function's return value for less than
   * `Promise.resolve` (an admission 1,450 -> 1,319 instructions, bench/library-instructions.ts),
   * and a synchronous store's answer has no turn to wait for.
   */
  private async consumeNow(table: SyncPolicyStore, key: string, options?: ConsumeOptions): Promise<Decision> {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.consume');
    return table.consume(key, options?.cost ?? 1, this.clockFree ? NaN : this.clock.now());
  }

  /** consumeSync returns the decision for a request on `key` with no promise; needs a synchronous store. */
  consumeSync(key: string, options?: ConsumeOptions): Decision {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.consumeSync');
    const cost = options?.cost ?? 1;
    const nowMs = this.clock.now();
    const decision = this.sync().consume(key, cost, nowMs);
    if (this.watcher !== undefined) this.report('consume', key, cost, decision, nowMs);
    return decision;
  }

  /** peek resolves to what {@link consume} would answer now, without charging. */
  peek(key: string, options?: ConsumeOptions): Promise<Decision> {
    if (!isKey(key)) return Promise.reject(invalidKey(key, 'Limiter.peek'));
    const cost = options?.cost ?? 1;
    const nowMs = this.clockFree ? NaN : this.clock.now();
    let answer: MaybePromise<Decision>;
    try {
      answer = this.active.peek(key, cost, nowMs);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.watcher === undefined ? Promise.resolve(answer) : this.reported('peek', key, cost, answer, nowMs);
  }

  /** peekSync returns what {@link consumeSync} would answer now, without charging. */
  peekSync(key: string, options?: ConsumeOptions): Decision {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.peekSync');
    const cost = options?.cost ?? 1;
    const nowMs = this.clock.now();
    const decision = this.sync().peek(key, cost, nowMs);
    if (this.watcher !== undefined) this.report('peek', key, cost, decision, nowMs);
    return decision;
  }

  /** refund gives `cost` back to `key` (never above the policy's limit), for example when a request turned out not to count. */
  async refund(key: string, cost: number): Promise<void> {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.refund');
    await this.active.refund(key, cost, this.clock.now());
  }

  /** refundSync is {@link refund} with no promise; needs a synchronous store. */
  refundSync(key: string, cost: number): void {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.refundSync');
    this.sync().refund(key, cost, this.clock.now());
  }

  /** reset forgets `key`, so its next request is treated as a fresh key's. */
  async reset(key: string): Promise<void> {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.reset');
    await this.active.reset(key);
  }

  /** resetSync is {@link reset} with no promise; needs a synchronous store. */
  resetSync(key: string): void {
    if (!isKey(key)) throw invalidKey(key, 'Limiter.resetSync');
    this.sync().reset(key);
  }

  /**
   * close releases this limiter's bind of its policy (`Store.release`): once no limiter binds an
   * equal policy, the memory store drops its table and every key's state. Every later call fails
   * with `LIMITER_CLOSED`. Closing twice does nothing. Waiters already in `acquire` are served.
   *
   * @example
   * const next = new Limiter({ policy: tokenBucket(config.api), store });   // same policy: same table, same counts
   * current.close();                                                        // a changed policy's table is freed
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.syncTable = undefined;
    this.active = CLOSED_TABLE;
    this.store.release?.(this.policy);
  }

  /**
   * nowMsForStore returns the time this limiter hands its store: the clock's, or NaN when the
   * store decides on its own clock (see `PolicyStore.ownsClock`). For `consumeAll`.
   */
  nowMsForStore(): number {
    return this.clockFree ? NaN : this.clock.now();
  }

  /** syncTableOrUndefined returns the synchronous table calls go to, or undefined (an asynchronous store, or closed). For `consumeAll`. */
  syncTableOrUndefined(): SyncPolicyStore | undefined {
    return this.syncTable;
  }

  /** activeTable returns the table calls go to; it fails with `LIMITER_CLOSED` after {@link close}. For `consumeAll`. */
  activeTable(): PolicyStore {
    return this.active;
  }

  /** report hands a decision event to the observer (call only when one listens: `hasDecisionObserver`). */
  report(operation: 'consume' | 'peek', key: string, cost: number, decision: Decision, nowMs: number): void {
    const atMs = Number.isNaN(nowMs) ? this.clock.now() : nowMs;
    notify(this.watcher, 'decision', {
      limiter: this.name,
      key: this.reportKeys ? key : undefined,
      cost,
      operation,
      decision,
      atMs,
    });
  }

  private reported(
    operation: 'consume' | 'peek',
    key: string,
    cost: number,
    answer: MaybePromise<Decision>,
    nowMs: number,
  ): Promise<Decision> {
    if (!isThenable(answer)) {
      this.report(operation, key, cost, answer, nowMs);
      return Promise.resolve(answer);
    }
    return Promise.resolve(answer).then((decision) => {
      this.report(operation, key, cost, decision, nowMs);
      return decision;
    });
  }

  private depthReporter(observer: Observer): (key: string, depth: number) => void {
    return (key, depth) =>
      notify(observer, 'queue', {
        queue: this.name,
        key: this.reportKeys ? key : undefined,
        depth,
        atMs: this.clock.now(),
      });
  }

  /**
   * The synchronous table, or the error of a limiter without one. The error is built apart, so
   * that this stays small enough for V8 to inline into a caller's loop whole (bytecode counts).
   */
  private sync(): SyncPolicyStore {
    const table = this.syncTable;
    if (table === undefined) throw this.notSyncError();
    return table;
  }

  /** The error of a `...Sync` call on a limiter with no synchronous table: closed, or an asynchronous store. */
  private notSyncError(): FloodgateError {
    if (this.closed) return closedError();
    return new FloodgateError(
      'STORE_NOT_SYNC',
      "this limiter's store answers asynchronously: use consume/peek/refund/reset (promises) instead of the ...Sync methods",
      'store',
    );
  }
}

/** closedError returns the `LIMITER_CLOSED` error every call of a closed limiter fails with. */
export function closedError(): FloodgateError {
  return new FloodgateError(
    'LIMITER_CLOSED',
    "this limiter was closed (Limiter.close released its policy's table): build a new Limiter",
    'Limiter',
  );
}

function refuseClosed(): never {
  throw closedError();
}

/** The table of a closed limiter: every call fails with `LIMITER_CLOSED`. */
const CLOSED_TABLE: PolicyStore = Object.freeze({
  synchronous: false,
  consume: refuseClosed,
  peek: refuseClosed,
  refund: refuseClosed,
  reset: refuseClosed,
});
