import { TIMER_MAX_MS } from './smooth/sleep.js';

/**
 * TimerHandle identifies one timer set with {@link Timers.setTimer}. It is opaque: only the
 * Timers that made it can clear it.
 */
export type TimerHandle = object;

/**
 * Timers sets and clears one-shot timers. Everything in floodgate that waits takes a Timers (the
 * `timers` option) as it takes a {@link Clock}, so tests can run every wait on a
 * {@link ManualClock}, which is both.
 *
 * floodgate keeps at most one timer per waiting structure (one per key with waiters, one per
 * queue or semaphore with waiters), never one per waiter, and none while nobody waits.
 */
export interface Timers {
  /**
   * setTimer calls `callback` once, `delayMs` milliseconds from now, and returns a handle for
   * {@link clearTimer}. A delay of 0 or less (or NaN) fires as soon as possible; Infinity never fires.
   */
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  /** clearTimer cancels the timer unless it has fired; clearing twice, or after it fired, does nothing. */
  clearTimer(handle: TimerHandle): void;
}

/** One systemTimers timer: the `setTimeout` of its current step, if any. */
class SystemTimer {
  timeout: ReturnType<typeof setTimeout> | undefined = undefined;
}

/** Arms `timer` for `remainingMs`, in steps of at most 2^31 - 1 ms (a longer setTimeout fires at once). */
function armStep(timer: SystemTimer, callback: () => void, remainingMs: number): void {
  const stepMs = Math.min(remainingMs, TIMER_MAX_MS);
  timer.timeout = setTimeout(() => {
    if (remainingMs > stepMs) {
      armStep(timer, callback, remainingMs - stepMs);
    } else {
      timer.timeout = undefined;
      callback();
    }
  }, stepMs);
}

/**
 * systemTimers is the default {@link Timers}: `setTimeout`, with delays rounded up to whole ms (so
 * a timer never fires before its delay on the timer's own clock) and chained in steps past
 * 2^31 - 1 ms (about 24.8 days), where a single `setTimeout` would fire at once.
 *
 * Its timers keep the process alive (they are not `unref`'d), on purpose. A timer exists only
 * while someone waits: a pending `acquire`, a task queued in a shaping queue, a semaphore waiter.
 * Letting the process exit under such a waiter would drop the caller's work without an error
 * (Node ends an `await` at top level with "unsettled top-level await"). An idle limiter, queue or
 * semaphore holds no timer, so it never keeps a process open. To let a process exit while
 * requests still wait, abort them with their `signal`.
 */
export const systemTimers: Timers = Object.freeze({
  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const timer = new SystemTimer();
    if (delayMs === Infinity) return timer;
    armStep(timer, callback, delayMs > 0 ? Math.ceil(delayMs) : 0);
    return timer;
  },
  clearTimer(handle: TimerHandle): void {
    if (!(handle instanceof SystemTimer) || handle.timeout === undefined) return;
    clearTimeout(handle.timeout);
    handle.timeout = undefined;
  },
});

/** isTimers returns whether `value` has the two methods of {@link Timers} (a ManualClock does). */
export function isTimers(value: unknown): value is Timers {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Timers>;
  return typeof candidate.setTimer === 'function' && typeof candidate.clearTimer === 'function';
}
