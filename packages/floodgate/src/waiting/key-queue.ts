import type { Clock } from '../core/clock.js';
import type { Timers } from '../core/timers.js';
import type { MaybePromise, PolicyStore } from '../stores/store.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { aborted, acquireOn, asError, rejectVia, type Settle } from './errors.js';
import { WaiterRing } from './waiter-ring.js';

/** KeyQueueContext is what the queues of every key of one limiter share. */
export interface KeyQueueContext {
  readonly table: PolicyStore;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Most waiters per key. */
  readonly maxQueue: number;
  /** The policy's limit: the most cost one store call may carry. */
  readonly limit: number;
  /** Told the line's depth after each change, when someone listens. */
  readonly depthChanged: ((key: string, depth: number) => void) | undefined;
  /** forget is called once a key's queue holds no waiter and no store call is in flight. */
  forget(key: string, queue: KeyQueue): void;
}

/** Arrival is one `acquire` call, as the queues see it: its key, cost, bounds, and time of arrival. */
export interface Arrival {
  readonly key: string;
  readonly cost: number;
  readonly maxWaitMs: number;
  readonly signal: AbortSignal | undefined;
  readonly nowMs: number;
}

/** isThenable tells a store's promised answer from an immediate one. */
export function isThenable<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * KeyQueue is the line of `acquire` calls waiting on one key, first in, first out, with one alarm
 * for the whole line. Store calls for the key go one at a time and in order, so that an
 * asynchronous store sees the waiters in the order they came; a synchronous store answers each
 * at once, so a waiter is admitted inside the very timer callback that finds it due.
 *
 * Subclasses decide how waiters get through: {@link BookingQueue} books the future for each,
 * {@link RetryQueue} retries the head alone.
 */
export abstract class KeyQueue {
  protected readonly ring = new WaiterRing<Settle<void>>();
  protected readonly alarm: Alarm;
  /** Whether a store call is in flight (asynchronous stores only). */
  protected busy = false;
  /** Cost charged for waiters that left, to give back to the store before anything else. */
  protected refundDue = 0;
  /** Listeners of the waiters that came with a signal; made for the first. */
  private hooks: AbortHooks | undefined = undefined;

  constructor(
    readonly key: string,
    protected readonly context: KeyQueueContext,
  ) {
    this.alarm = new Alarm(context.clock, context.timers, () => this.pump());
  }

  /** enqueue adds a caller behind those already waiting, or refuses it at once. */
  abstract enqueue(arrival: Arrival): Promise<void>;

  /** pump does everything that can be done now: store calls, admissions, re-arming the alarm. */
  abstract pump(): void;

  /** giveBack returns what waiter `seq`, about to leave unadmitted, holds in the store. */
  protected abstract giveBack(seq: number): void;

  /** join adds a waiter at the tail and returns its promise. */
  protected join(cost: number, timeMs: number, signal: AbortSignal | undefined): Promise<void> {
    let settle!: Settle<void>;
    const promise = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const seq = this.ring.push(settle, cost, timeMs);
    if (signal !== undefined) (this.hooks ??= new AbortHooks(this.abort)).add(seq, signal);
    this.context.depthChanged?.(this.key, this.ring.live);
    return promise;
  }

  /** admit resolves waiter `seq` and removes it. */
  protected admit(seq: number): void {
    const settle = this.ring.take(seq);
    if (settle === undefined) return;
    this.hooks?.remove(seq);
    this.context.depthChanged?.(this.key, this.ring.live);
    settle();
  }

  /** fail rejects waiter `seq` with `error` and removes it; it gives nothing back to the store. */
  protected fail(seq: number, error: Error): void {
    const settle = this.ring.take(seq);
    if (settle === undefined) return;
    this.hooks?.remove(seq);
    this.context.depthChanged?.(this.key, this.ring.live);
    rejectVia(settle, error);
  }

  /** describe names this queue in error messages. */
  protected describe(): string {
    return acquireOn(this.key);
  }

  /**
   * refundSome gives back up to one limit's worth of {@link refundDue}: a store refuses a single
   * call above the limit, and refunding in parts ends where one refund of the whole would.
   */
  protected refundSome(): void {
    const cost = Math.min(this.refundDue, this.context.limit);
    this.refundDue -= cost;
    let done: MaybePromise<void>;
    try {
      done = this.context.table.refund(this.key, cost, this.context.clock.now());
    } catch {
      // Nobody is left to tell: the caller that left has its answer. The store keeps the charge.
      return;
    }
    if (!isThenable(done)) return;
    this.busy = true;
    done.then(this.resume, this.resume);
  }

  /**
   * answerFor runs `call`, a store call made for waiter `seq`, and hands its answer to `onAnswer`:
   * at once from a synchronous store; from an asynchronous one when it settles, holding the queue
   * busy meanwhile and resuming it after. A store failure fails waiter `seq`.
   */
  protected answerFor<T>(seq: number, call: () => MaybePromise<T>, onAnswer: (answer: T) => void): void {
    let answer: MaybePromise<T>;
    try {
      answer = call();
    } catch (error) {
      this.fail(seq, asError(error));
      return;
    }
    if (!isThenable(answer)) {
      onAnswer(answer);
      return;
    }
    this.busy = true;
    answer.then(
      (value) => {
        onAnswer(value);
        this.resume();
      },
      (error: unknown) => {
        this.fail(seq, asError(error));
        this.resume();
      },
    );
  }

  /** resume continues after an asynchronous store call settled. */
  protected readonly resume = (): void => {
    this.busy = false;
    this.pump();
  };

  /** Forgets this queue once nothing waits and nothing is in flight; call at the end of a pump. */
  protected forgetIfIdle(): void {
    if (this.ring.live === 0 && !this.busy && this.refundDue === 0) this.context.forget(this.key, this);
  }

  private readonly abort = (seq: number, signal: AbortSignal): void => {
    if (!this.ring.has(seq)) return;
    this.giveBack(seq);
    this.fail(seq, aborted(this.describe(), signal));
    this.pump();
  };
}
