/** SleepMs is a function that resolves after `ms` milliseconds (fractions allowed; 0 resolves at once). */
export type SleepMs = (ms: number) => Promise<void>;

/** TIMER_MAX_MS is the longest delay `setTimeout` honours, 2^31 - 1 ms (about 24.8 days). */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/**
 * sleepInSteps returns a promise that resolves after `ms` milliseconds, rounded up to whole ms so
 * it never wakes early, made of `waitMs` steps of at most {@link TIMER_MAX_MS} each (a longer
 * `setTimeout` would fire at once). `ms` of 0 or less resolves without calling `waitMs`.
 */
export async function sleepInSteps(ms: number, waitMs: (stepMs: number) => Promise<void>): Promise<void> {
  let remainingMs = Math.ceil(ms);
  while (remainingMs > 0) {
    const stepMs = Math.min(remainingMs, TIMER_MAX_MS);
    await waitMs(stepMs);
    remainingMs -= stepMs;
  }
}

/** timerSleep returns a promise that resolves after `ms` milliseconds of real time, using `setTimeout`. */
export const timerSleep: SleepMs = (ms) =>
  sleepInSteps(ms, (stepMs) => new Promise<void>((resolve) => setTimeout(resolve, stepMs)));
