import type { Clock } from '../core/clock.js';
import type { TimerHandle, Timers } from '../core/timers.js';

/** Deadline is one pending store call watched by a {@link DeadlineQueue}. */
export interface Deadline {
  /** When the call is cut off, on the queue's clock, in ms. */
  readonly deadlineMs: number;
  /** Set once the call settled or was cut off: a deadline acts once. */
  settled: boolean;
  /** expire is called once, when the deadline passes before the call settled. */
  readonly expire: () => void;
}

/**
 * DeadlineQueue cuts off store calls that do not answer in time, with one timer for all of them,
 * never one per call. Calls join in the order they start and share one `timeoutMs`, so their
 * deadlines come in order: the timer waits for the oldest call still pending only. (Were the clock
 * to step back, a later call would be cut off no earlier than the one before it.) While nothing is
 * pending no timer is held, so an idle limiter keeps no process alive.
 */
export class DeadlineQueue {
  private entries: Deadline[] = [];
  private head = 0;
  private pending = 0;
  private timer: TimerHandle | undefined = undefined;

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers,
  ) {}

  /** add watches `deadline` until {@link settle} is called for it or it expires. */
  add(deadline: Deadline): void {
    this.entries.push(deadline);
    this.pending++;
    if (this.timer === undefined) this.arm(deadline.deadlineMs - this.clock.now());
  }

  /**
   * settle marks `deadline` answered and returns true, or returns false when it had already
   * expired (the caller has had its answer: the late one is dropped).
   */
  settle(deadline: Deadline): boolean {
    if (deadline.settled) return false;
    deadline.settled = true;
    if (--this.pending === 0) this.idle();
    return true;
  }

  private arm(delayMs: number): void {
    this.timer = this.timers.setTimer(this.fire, delayMs);
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const nowMs = this.clock.now();
    const expired: Deadline[] = [];
    while (this.head < this.entries.length) {
      const deadline = this.entries[this.head]!;
      if (!deadline.settled && deadline.deadlineMs > nowMs) break;
      this.head++;
      if (deadline.settled) continue;
      deadline.settled = true;
      this.pending--;
      expired.push(deadline);
    }
    if (this.pending === 0) {
      this.idle();
    } else {
      if (this.head > 1024 && this.head * 2 > this.entries.length) {
        this.entries = this.entries.slice(this.head);
        this.head = 0;
      }
      this.arm(this.entries[this.head]!.deadlineMs - nowMs);
    }
    // Last, so that what the callers do next (even start new calls) meets a consistent queue.
    for (const deadline of expired) deadline.expire();
  };

  /** Nothing pending: drop the timer and every entry. */
  private idle(): void {
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.timer = undefined;
    this.entries = [];
    this.head = 0;
  }
}
