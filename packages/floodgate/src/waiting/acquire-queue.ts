import type { Algorithm } from '../core/algorithm.js';
import type { Clock } from '../core/clock.js';
import type { Timers } from '../core/timers.js';
import type { PolicyStore, SyncPolicyStore } from '../stores/store.js';
import { BookingQueue } from './booking-queue.js';
import { aborted, acquireOn, queueFull, waitTimeout } from './errors.js';
import type { Arrival, KeyQueue, KeyQueueContext } from './key-queue.js';
import { RetryQueue } from './retry-queue.js';
import { checkMaxWaitMs, checkSignal } from './validate.js';

/** AcquireOptions are the per-request options of `Limiter.acquire`. */
export interface AcquireOptions {
  /** The request's weight (default 1): any finite number from 0 to the policy's limit. */
  cost?: number;
  /**
   * Longest the caller will wait to be admitted, in ms (default Infinity). When the wait is known
   * to be longer (at once, for policies that book the future), the call fails without waiting.
   * 0 means: admit now or fail.
   */
  maxWaitMs?: number;
  /** Ends the wait with an `ABORTED` error when it fires; an aborted request is never charged. */
  signal?: AbortSignal;
}

/** AcquireQueuesOptions configures {@link AcquireQueues}; `Limiter` passes its own parts. */
export interface AcquireQueuesOptions {
  readonly policy: Algorithm;
  readonly table: PolicyStore;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Most waiters per key: a whole number, or Infinity. */
  readonly maxQueue: number;
  /** Told each key's line depth after it changed (the observer's `queue` hook); absent: nothing is reported. */
  readonly depthChanged?: ((key: string, depth: number) => void) | undefined;
}

/** The promise of every caller admitted at once: settled, shared, never rejected. */
const ADMITTED: Promise<void> = Promise.resolve();

/**
 * AcquireQueues holds the lines of callers waiting to be admitted on the keys of one limiter:
 * a {@link BookingQueue} per key for policies that can book the future, else a
 * {@link RetryQueue}. A key has a queue only while someone waits on it.
 *
 * A caller on a key nobody waits on tries to pass at once, with a synchronous store without
 * creating anything: an admitted call costs one store call and returns a settled promise.
 */
export class AcquireQueues {
  private readonly queues = new Map<string, KeyQueue>();
  private readonly context: KeyQueueContext;
  private readonly syncTable: SyncPolicyStore | undefined;
  private readonly policy: Algorithm;

  constructor(options: AcquireQueuesOptions) {
    const { policy, table, clock, timers, maxQueue, depthChanged } = options;
    this.policy = policy;
    this.syncTable = table.synchronous ? (table as SyncPolicyStore) : undefined;
    this.context = {
      table,
      clock,
      timers,
      maxQueue,
      limit: policy.limit,
      depthChanged,
      forget: (key, queue) => {
        if (this.queues.get(key) === queue) this.queues.delete(key);
      },
    };
  }

  /**
   * acquire resolves once a request of `options.cost` on `key` is admitted and charged, and
   * rejects with a {@link FloodgateError}: `WAIT_TIMEOUT`, `ABORTED`, `QUEUE_FULL`, or the
   * store's own error. It never throws.
   */
  acquire(key: string, options?: AcquireOptions): Promise<void> {
    try {
      const signal = options === undefined ? undefined : checkSignal(options.signal, 'signal');
      if (signal?.aborted === true) return Promise.reject(aborted(acquireOn(key), signal));
      const arrival: Arrival = {
        key,
        cost: options?.cost ?? 1,
        maxWaitMs: options === undefined ? Infinity : checkMaxWaitMs(options.maxWaitMs, 'maxWaitMs'),
        signal,
        nowMs: this.context.clock.now(),
      };
      const queue = this.queues.get(key);
      if (queue === undefined && this.syncTable !== undefined) {
        return this.syncTable.reserve === undefined
          ? this.firstTry(this.syncTable, arrival)
          : this.firstBooking(this.syncTable, arrival);
      }
      this.policy.checkCost(arrival.cost);
      if (this.context.maxQueue === 0) return this.passOrRefuse(arrival);
      return (queue ?? this.openQueue(key)).enqueue(arrival);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A booking policy, nobody waiting, a synchronous store: book, and queue only to wait. */
  private firstBooking(table: SyncPolicyStore, arrival: Arrival): Promise<void> {
    const { key, cost, maxWaitMs, nowMs } = arrival;
    const mayWait = this.context.maxQueue > 0;
    const waitMs = table.reserve!(key, cost, nowMs, mayWait ? maxWaitMs : 0);
    if (waitMs === 0) return ADMITTED;
    if (waitMs < 0) return Promise.reject(mayWait ? waitTimeout(acquireOn(key), maxWaitMs) : this.full(key));
    const queue = new BookingQueue(key, this.context);
    this.queues.set(key, queue);
    return queue.startBooked(arrival, nowMs + waitMs);
  }

  /** A window policy, nobody waiting, a synchronous store: try, and queue only to wait. */
  private firstTry(table: SyncPolicyStore, arrival: Arrival): Promise<void> {
    const { key, cost, maxWaitMs, nowMs } = arrival;
    const decision = table.consume(key, cost, nowMs);
    if (decision.allowed) return ADMITTED;
    if (this.context.maxQueue === 0) return Promise.reject(this.full(key));
    const retryAfterMs = Math.max(1, decision.retryAfterMs);
    if (retryAfterMs > maxWaitMs) return Promise.reject(waitTimeout(acquireOn(key), maxWaitMs));
    const queue = new RetryQueue(key, this.context, nowMs + retryAfterMs);
    this.queues.set(key, queue);
    return queue.startWaiting(arrival);
  }

  /** The queue of an asynchronous store, made before its first call so later callers line up behind. */
  private openQueue(key: string): KeyQueue {
    const queue =
      this.context.table.reserve === undefined
        ? new RetryQueue(key, this.context, -Infinity)
        : new BookingQueue(key, this.context);
    this.queues.set(key, queue);
    return queue;
  }

  /** With maxQueue 0 on an asynchronous store nobody ever waits: pass now or be refused. */
  private async passOrRefuse({ key, cost, nowMs }: Arrival): Promise<void> {
    const { table } = this.context;
    const passed =
      table.reserve === undefined
        ? (await table.consume(key, cost, nowMs)).allowed
        : (await table.reserve(key, cost, nowMs, 0)) === 0;
    if (!passed) throw this.full(key);
  }

  private full(key: string): Error {
    return queueFull(acquireOn(key), 'maxQueue', this.context.maxQueue);
  }
}
