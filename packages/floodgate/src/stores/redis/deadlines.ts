import type { Clock } from '../../core/clock.js';
import type { TimerHandle, Timers } from '../../core/timers.js';

interface Pending {
  readonly deadlineMs: number;
  settled: boolean;
  readonly onTimeout: () => void;
}

/** DeadlinesOptions configures {@link Deadlines}. */
export interface DeadlinesOptions {
  /** How long each operation may take, in ms. */
  readonly timeoutMs: number;
  /** Where "now" comes from (the store's clock; a `ManualClock` in tests). */
  readonly clock: Clock;
  /** Where the one timer is set (the store's timers; a `ManualClock` in tests). */
  readonly timers: Timers;
}

/**
 * Deadlines bounds how long operations may take, with one timer for all of them (never one per
 * request). Every operation gets the same `timeoutMs`, so deadlines arrive in the order operations
 * start: a FIFO queue whose head is always the next to expire. Time is read from the injected
 * clock and the timer set on the injected timers, so a test drives every deadline by moving a
 * `ManualClock`. The timer exists only while an operation is in flight: it is cleared as soon as
 * the last one settles, so it never keeps an idle process alive.
 */
export class Deadlines {
  private readonly queue: Pending[] = [];
  private head = 0;
  private timer: TimerHandle | undefined;
  /** Operations neither settled nor timed out; at 0 the timer is cleared at once. */
  private inFlight = 0;
  private readonly fireNow = (): void => this.fire();

  /** Creates a queue whose operations time out after `options.timeoutMs`. */
  constructor(private readonly options: DeadlinesOptions) {}

  /**
   * run resolves as `operation` does, or rejects with `timeoutError()` once `timeoutMs` passes
   * first. The operation itself is not cancelled (Redis may still run it).
   */
  run<T>(operation: Promise<T>, timeoutError: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        deadlineMs: this.options.clock.now() + this.options.timeoutMs,
        settled: false,
        onTimeout: () => reject(timeoutError()),
      };
      this.queue.push(pending);
      this.inFlight++;
      if (this.timer === undefined) this.arm();
      operation.then(
        (value) => {
          if (this.settle(pending)) resolve(value);
        },
        (error: unknown) => {
          if (this.settle(pending)) reject(error);
        },
      );
    });
  }

  /** Marks `pending` settled; returns false when its deadline had already passed. */
  private settle(pending: Pending): boolean {
    if (pending.settled) return false;
    pending.settled = true;
    if (--this.inFlight === 0) this.idle();
    return true;
  }

  /** Nothing in flight: no timer, and an empty queue. */
  private idle(): void {
    if (this.timer !== undefined) this.options.timers.clearTimer(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.head = 0;
  }

  private arm(): void {
    while (this.head < this.queue.length && this.queue[this.head]!.settled) this.head++;
    this.compact();
    const next = this.queue[this.head];
    if (next === undefined) {
      this.timer = undefined;
      return;
    }
    const delayMs = Math.max(0, next.deadlineMs - this.options.clock.now());
    this.timer = this.options.timers.setTimer(this.fireNow, delayMs);
  }

  private fire(): void {
    const nowMs = this.options.clock.now();
    for (; this.head < this.queue.length; this.head++) {
      const pending = this.queue[this.head]!;
      if (pending.settled) continue;
      if (pending.deadlineMs > nowMs) break;
      pending.settled = true;
      this.inFlight--;
      pending.onTimeout();
    }
    this.timer = undefined;
    if (this.inFlight === 0) this.idle();
    else this.arm();
  }

  /** Drops the settled prefix once it is large, so the queue's memory follows the operations in flight. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
