import type { Clock } from '../core/clock.js';
import type { TimerHandle, Timers } from '../core/timers.js';

/** Deadline is one pending store call watched by a {@link DeadlineQueue}. */
export interface Deadline {
  /** When the call is cut off, on the queue's clock, in ms. */
  readonly deadlineMs: number;
  /** Set once the call settled or was cut off: a deadline acts once. */
  settled: boolean;
  /** expire is called once, when the deadline passes (or the queue abandons it) before the call settled. */
  readonly expire: () => void;
  /** What the call was sent to (a Redis node's circuit, say), for {@link DeadlineQueue.abandon}. */
  readonly target?: unknown;
}

/**
 * DeadlineQueue cuts off store calls that do not answer in time, with one timer for all of them,
 * never one per call. Calls join in the order they start; with one timeout their deadlines come in
 * that order and joining is O(1). An adaptive timeout may shorten, so a call may join with a
 * deadline before its elders': it is placed in deadline order, found from the tail. The timer waits
 * for the earliest deadline still pending only. While nothing is pending no timer is held, so an
 * idle limiter keeps no process alive.
 */
export class DeadlineQueue {
  private entries: Deadline[] = [];
  private head = 0;
  private pending = 0;
  private timer: TimerHandle | undefined = undefined;
  /** The deadline the timer is set for. */
  private armedForMs = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers,
  ) {}

  /** size is how many calls are pending. */
  get size(): number {
    return this.pending;
  }

  /** add watches `deadline` until {@link settle} is called for it or it expires. */
  add(deadline: Deadline): void {
    const entries = this.entries;
    let at = entries.length;
    while (at > this.head && entries[at - 1]!.deadlineMs > deadline.deadlineMs) at--;
    if (at === entries.length) entries.push(deadline);
    else entries.splice(at, 0, deadline);
    this.pending++;
    if (deadline.deadlineMs < this.armedForMs) this.arm(deadline.deadlineMs);
  }

  /**
   * settle marks `deadline` answered and returns true, or returns false when it had already
   * expired (the caller has had its answer: the late one is the caller's to use or drop).
   */
  settle(deadline: Deadline): boolean {
    if (deadline.settled) return false;
    deadline.settled = true;
    if (--this.pending === 0) this.idle();
    return true;
  }

  /**
   * abandon cuts off every pending call sent to `target` now, as if its deadline had passed: for a
   * store found unhealthy (its circuit opened), where waiting longer only delays the failure
   * policy's answer. Calls to other targets keep their deadlines.
   */
  abandon(target: unknown): void {
    if (this.pending === 0) return;
    const expired: Deadline[] = [];
    for (let i = this.head; i < this.entries.length; i++) {
      const deadline = this.entries[i]!;
      if (deadline.settled || deadline.target !== target) continue;
      deadline.settled = true;
      this.pending--;
      expired.push(deadline);
    }
    if (this.pending === 0) this.idle();
    for (const deadline of expired) deadline.expire();
  }

  private arm(deadlineMs: number): void {
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.armedForMs = deadlineMs;
    this.timer = this.timers.setTimer(this.fire, Math.max(0, deadlineMs - this.clock.now()));
  }

  /** True while an expiry check waits for the event loop's check phase. */
  private checking = false;

  /**
   * The timer went off. The cut-off is put off to the event loop's check phase (`setImmediate`),
   * so that answers that arrived while the timer was due, say during a stall of this process's
   * event loop, are read first (the poll phase comes between): only a call that truly has no
   * answer yet is cut off, not one whose answer sat unread in a socket. The timer is set again at
   * once for the first deadline not yet due.
   */
  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedForMs = Infinity;
    const nowMs = this.clock.now();
    let next = this.head;
    while (next < this.entries.length && (this.entries[next]!.settled || this.entries[next]!.deadlineMs <= nowMs))
      next++;
    if (next < this.entries.length) this.arm(this.entries[next]!.deadlineMs);
    if (this.checking) return;
    this.checking = true;
    setImmediate(this.check);
  };

  /** Cuts off the calls whose deadline has passed and that are still without an answer. */
  private readonly check = (): void => {
    this.checking = false;
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
      const first = this.entries[this.head]!.deadlineMs;
      if (first < this.armedForMs) this.arm(first);
    }
    // Last, so that what the callers do next (even start new calls) meets a consistent queue.
    for (const deadline of expired) deadline.expire();
  };

  /** Nothing pending: drop the timer and every entry. */
  private idle(): void {
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.timer = undefined;
    this.armedForMs = Infinity;
    this.entries = [];
    this.head = 0;
  }
}

/**
 * watch resolves as `operation` does, or rejects with `timeoutError()` once `timeoutMs` passes
 * first (or `queue` abandons `target`, what the call was sent to). The operation itself is not cancelled: should it answer after
 * its deadline, `late` (when given) receives that answer, which the caller has not had.
 */
export function watch<T>(
  queue: DeadlineQueue,
  clock: Clock,
  operation: Promise<T>,
  timeoutMs: number,
  timeoutError: () => Error,
  late?: (value: T) => void,
  target?: unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const deadline: Deadline = {
      deadlineMs: clock.now() + timeoutMs,
      settled: false,
      expire: () => reject(timeoutError()),
      target,
    };
    queue.add(deadline);
    operation.then(
      (value) => {
        if (queue.settle(deadline)) resolve(value);
        else if (late !== undefined) late(value);
      },
      (error: unknown) => {
        if (queue.settle(deadline)) reject(error);
      },
    );
  });
}
