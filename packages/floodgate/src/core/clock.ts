import type { TimerHandle, Timers } from './timers.js';

/**
 * Clock is the source of the current time, in milliseconds since the Unix epoch (fractions
 * allowed). Everything in floodgate that needs "now" takes a Clock, so tests can use a
 * {@link ManualClock}.
 */
export interface Clock {
  /** now returns the current time in milliseconds. */
  now(): number;
}

/**
 * systemClock reads the wall clock (`Date.now()`). It is the default `clock` option and, with
 * {@link monotonicClock}, the only place in the core that reads real time.
 */
export const systemClock: Clock = Object.freeze({ now: (): number => Date.now() });

/**
 * monotonicClock returns `performance.now()`: ms since the process started, never stepped back or
 * forward by a change of the wall clock. It is for measuring durations (deadlines, back-offs, how
 * long a cached answer holds), never for times shared with other processes.
 */
export const monotonicClock: Clock = Object.freeze({ now: (): number => performance.now() });

/** One timer of a {@link ManualClock}; `callback` is undefined once it fired or was cleared. */
class ManualTimer {
  constructor(
    readonly dueMs: number,
    readonly order: number,
    public callback: (() => void) | undefined,
  ) {}
}

/** Whether timer `a` fires before `b`: earlier due time first, then the order they were set in. */
function firesBefore(a: ManualTimer, b: ManualTimer): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.order < b.order);
}

/**
 * ManualClock is a {@link Clock} that moves only when told to, for tests and simulations.
 * It may be set backwards, to test how limiters treat a clock that jumps back.
 *
 * It is also {@link Timers}: a timer set on it fires when {@link advance} or {@link set} moves the
 * clock to or past its due time, never on its own. Due timers fire in time order (ties in the
 * order they were set), each seeing `now()` equal to its due time, and a timer set by a callback
 * fires in the same move if it falls due within it. Moving the clock back fires nothing. The
 * callbacks run synchronously; promises they settle run their reactions after the move returns.
 *
 * @example
 * const clock = new ManualClock(0);
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }), clock });
 * limiter.consumeSync('a');   // allowed
 * clock.advance(1000);        // one token comes back
 *
 * const admitted = limiter.acquire('a');   // waits on the clock's own timers
 * clock.advance(1000);                     // the waiter's timer fires at 2000
 * await admitted;
 */
export class ManualClock implements Clock, Timers {
  private nowMs: number;
  /** Pending timers as a binary min-heap by {@link firesBefore}; cleared ones are dropped when they surface. */
  private readonly heap: ManualTimer[] = [];
  private liveTimers = 0;
  private timersSet = 0;
  private moving = false;

  /** Creates a clock that reads `startMs` (default 0) until moved. */
  constructor(startMs = 0) {
    this.nowMs = startMs;
  }

  /** now returns the time the clock was last set or advanced to, in milliseconds. */
  now(): number {
    return this.nowMs;
  }

  /**
   * advance moves the clock by `ms` (negative moves it back) and returns the new time, firing the
   * timers that fall due on the way.
   */
  advance(ms: number): number {
    if (!Number.isFinite(ms)) throw new RangeError(`ManualClock.advance: ms must be finite, got ${ms}`);
    return this.moveTo(this.nowMs + ms);
  }

  /** set moves the clock to `ms` exactly and returns it, firing the timers that fall due on the way. */
  set(ms: number): number {
    if (!Number.isFinite(ms)) throw new RangeError(`ManualClock.set: ms must be finite, got ${ms}`);
    return this.moveTo(ms);
  }

  /**
   * setTimer arranges for `callback` to run when the clock reaches `now() + delayMs` (a delay of 0
   * or less, or NaN, means the next move, even a move by 0). Infinity never fires.
   */
  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const dueMs = this.nowMs + (delayMs > 0 ? delayMs : 0);
    const timer = new ManualTimer(dueMs, this.timersSet++, dueMs === Infinity ? undefined : callback);
    if (timer.callback === undefined) return timer;
    this.heap.push(timer);
    this.siftUp(this.heap.length - 1);
    this.liveTimers++;
    return timer;
  }

  /** clearTimer cancels a timer set on this clock; clearing twice, or after it fired, does nothing. */
  clearTimer(handle: TimerHandle): void {
    if (!(handle instanceof ManualTimer) || handle.callback === undefined) return;
    handle.callback = undefined;
    this.liveTimers--;
    // Cleared timers leave the heap when they surface; rebuild it before they outnumber live ones.
    if (this.heap.length > 64 && this.heap.length > 2 * this.liveTimers) this.compact();
  }

  /** timerCount returns how many timers are set and have neither fired nor been cleared. */
  timerCount(): number {
    return this.liveTimers;
  }

  /** nextTimerAtMs returns the due time of the next timer to fire, or undefined when none is set. */
  nextTimerAtMs(): number | undefined {
    return this.peekLive()?.dueMs;
  }

  /**
   * Moves to `targetMs`, firing due timers in order. A callback that throws does not stop the
   * others; the first error is thrown once the clock is at `targetMs`.
   */
  private moveTo(targetMs: number): number {
    if (this.moving)
      throw new Error(
        'ManualClock: advance or set was called from a timer callback; move the clock from the test instead',
      );
    this.moving = true;
    let failure: { error: unknown } | undefined;
    try {
      for (let timer = this.peekLive(); timer !== undefined && timer.dueMs <= targetMs; timer = this.peekLive()) {
        this.popTop();
        const callback = timer.callback!;
        timer.callback = undefined;
        this.liveTimers--;
        // Never a move back: a pending timer is due at or after the time it was set, and the clock
        // passes a due time only by firing the timers due then.
        this.nowMs = timer.dueMs;
        try {
          callback();
        } catch (error) {
          failure ??= { error };
        }
      }
    } finally {
      this.moving = false;
    }
    this.nowMs = targetMs;
    if (failure !== undefined) throw failure.error;
    return this.nowMs;
  }

  /** The earliest live timer, dropping cleared ones from the top of the heap. */
  private peekLive(): ManualTimer | undefined {
    let top = this.heap[0];
    while (top !== undefined && top.callback === undefined) {
      this.popTop();
      top = this.heap[0];
    }
    return top;
  }

  /** Keeps only live timers; an array sorted in firing order is a valid heap. */
  private compact(): void {
    const live = this.heap.filter((timer) => timer.callback !== undefined);
    live.sort((a, b) => a.dueMs - b.dueMs || a.order - b.order);
    this.heap.length = live.length;
    for (let i = 0; i < live.length; i++) this.heap[i] = live[i]!;
  }

  private popTop(): void {
    const last = this.heap.pop();
    if (last === undefined || this.heap.length === 0) return;
    this.heap[0] = last;
    this.siftDown(0);
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    const timer = heap[index]!;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!firesBefore(timer, heap[parent]!)) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = timer;
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    const timer = heap[index]!;
    for (;;) {
      let child = 2 * index + 1;
      if (child >= heap.length) break;
      if (child + 1 < heap.length && firesBefore(heap[child + 1]!, heap[child]!)) child++;
      if (!firesBefore(heap[child]!, timer)) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = timer;
  }
}
