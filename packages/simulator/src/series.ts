import type { Arrivals } from './arrivals.js';
import type { KeyTimeline } from './oracle.js';

/** Series are one lane's values per time step of `bucketMs`, for the charts. */
export interface Series {
  /** Admitted cost per step, by admission time. */
  readonly admitted: Float64Array;
  /** Refused cost per step, by arrival time. */
  readonly refused: Float64Array;
  /** Longest wait of the requests arriving in each step, in ms (0: none waited). */
  readonly maxWaitMs: Float64Array;
  /** The hottest key's largest rolling-window sum within each step (its sum at the step's end when it admitted nothing then). */
  readonly windowPeak: Float64Array;
}

/** SeriesOptions says how to cut time into steps. */
export interface SeriesOptions {
  readonly bucketMs: number;
  readonly steps: number;
  readonly windowMs: number;
}

/**
 * seriesOf returns the per-step values of one lane from its arrivals' admission times (NaN:
 * refused) and its hottest key's admissions. Times past the last step count in the last step.
 */
export function seriesOf(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  hottest: KeyTimeline,
  options: SeriesOptions,
): Series {
  const { bucketMs, steps } = options;
  const stepOf = (ms: number): number => Math.min(steps - 1, Math.max(0, Math.floor(ms / bucketMs)));
  const admitted = new Float64Array(steps);
  const refused = new Float64Array(steps);
  const maxWaitMs = new Float64Array(steps);
  for (let i = 0; i < arrivals.length; i++) {
    const at = admittedAtMs[i]!;
    const arrivalStep = stepOf(arrivals.atMs[i]!);
    if (Number.isNaN(at)) {
      refused[arrivalStep]! += arrivals.costs[i]!;
      continue;
    }
    admitted[stepOf(at)]! += arrivals.costs[i]!;
    const wait = at - arrivals.atMs[i]!;
    if (wait > maxWaitMs[arrivalStep]!) maxWaitMs[arrivalStep] = wait;
  }
  return { admitted, refused, maxWaitMs, windowPeak: windowPeaks(hottest, options) };
}

/** The rolling sum over (t - windowMs, t] of one key, its peak per step. */
function windowPeaks(timeline: KeyTimeline, options: SeriesOptions): Float64Array {
  const { bucketMs, steps, windowMs } = options;
  const peaks = new Float64Array(steps);
  let sum = 0;
  let left = 0;
  let j = 0;
  for (let s = 0; s < steps; s++) {
    const endMs = (s + 1) * bucketMs;
    // The last step also takes anything later (the series' times are clamped into it).
    const takeUntilMs = s === steps - 1 ? Infinity : endMs;
    let peak = -1;
    for (; j < timeline.atMs.length && timeline.atMs[j]! < takeUntilMs; j++) {
      const t = timeline.atMs[j]!;
      for (; timeline.atMs[left]! <= t - windowMs; left++) sum -= timeline.costs[left]!;
      sum += timeline.costs[j]!;
      if (sum > peak) peak = sum;
    }
    if (peak < 0) {
      // Nothing admitted in this step: the window's sum at the step's end.
      for (; left < j && timeline.atMs[left]! <= endMs - windowMs; left++) sum -= timeline.costs[left]!;
      peak = sum;
    }
    peaks[s] = peak;
  }
  return peaks;
}
