import type { Arrivals } from './arrivals.js';
import type { LaneRun } from './engine/lane-run.js';
import type { KeyTimeline } from './oracle.js';
import type { StateReading } from './state.js';

/** Series are one lane's values per time step of `bucketMs`, for the charts. */
export interface Series {
  /** Admitted cost per step, by admission time. */
  readonly admitted: Float64Array;
  /** Refused cost per step, by arrival time. */
  readonly refused: Float64Array;
  /** Cost admitted after a wait (any wait above 0), per step, by arrival time. */
  readonly waited: Float64Array;
  /** Nearest-rank p50, p99 and max wait of the admitted requests arriving in each step, in ms (NaN: none admitted). */
  readonly waitP50Ms: Float64Array;
  readonly waitP99Ms: Float64Array;
  readonly waitMaxMs: Float64Array;
  /** The chart key's largest rolling-window sum within each step (its sum at the step's end when it admitted nothing then). */
  readonly windowPeak: Float64Array;
  /** The chart key's algorithm state at its fullest in each step: after each decision, and at the step's end (NaN: unknown). */
  readonly state: Float64Array;
}

/** SeriesOptions says how to cut time into steps, and which key the per-key charts follow. */
export interface SeriesOptions {
  readonly bucketMs: number;
  readonly steps: number;
  readonly windowMs: number;
  readonly chartKeyId: number;
  readonly reading: StateReading;
}

/**
 * seriesOf returns the per-step values of one lane from its run (admission times, NaN: refused;
 * states after each decision; the chart key's state at each step end) and the chart key's
 * admissions. Times past the last step count in the last step.
 */
export function seriesOf(arrivals: Arrivals, run: LaneRun, chartKey: KeyTimeline, options: SeriesOptions): Series {
  const { bucketMs, steps } = options;
  const stepOf = (ms: number): number => Math.min(steps - 1, Math.max(0, Math.floor(ms / bucketMs)));
  const admitted = new Float64Array(steps);
  const refused = new Float64Array(steps);
  const waited = new Float64Array(steps);
  let anyWait = false;
  for (let i = 0; i < arrivals.length; i++) {
    const at = run.admittedAtMs[i]!;
    const arrivalStep = stepOf(arrivals.atMs[i]!);
    if (Number.isNaN(at)) {
      refused[arrivalStep]! += arrivals.costs[i]!;
      continue;
    }
    admitted[stepOf(at)]! += arrivals.costs[i]!;
    if (at > arrivals.atMs[i]!) {
      waited[arrivalStep]! += arrivals.costs[i]!;
      anyWait = true;
    }
  }
  // With no wait at all (refuse mode), every step that admitted has waits of 0: nothing to sort.
  return {
    admitted,
    refused,
    waited,
    ...(anyWait ? waitPercentiles(arrivals, run.admittedAtMs, stepOf, steps) : noWaits(admitted)),
    windowPeak: windowPeaks(chartKey, options),
    state: statePerStep(run, stepOf, options),
  };
}

function noWaits(admitted: Float64Array): {
  waitP50Ms: Float64Array;
  waitP99Ms: Float64Array;
  waitMaxMs: Float64Array;
} {
  const zeros = admitted.map((cost) => (cost > 0 ? 0 : NaN));
  return { waitP50Ms: zeros, waitP99Ms: zeros, waitMaxMs: zeros };
}

/** Per step, the p50, p99 and max wait of the admitted requests that arrived in it (arrivals are in time order, so each step's are one run of indices). */
function waitPercentiles(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  stepOf: (ms: number) => number,
  steps: number,
): { waitP50Ms: Float64Array; waitP99Ms: Float64Array; waitMaxMs: Float64Array } {
  const waitP50Ms = new Float64Array(steps).fill(NaN);
  const waitP99Ms = new Float64Array(steps).fill(NaN);
  const waitMaxMs = new Float64Array(steps).fill(NaN);
  let scratch: Float64Array = new Float64Array(64);
  let i = 0;
  while (i < arrivals.length) {
    const step = stepOf(arrivals.atMs[i]!);
    let n = 0;
    for (; i < arrivals.length && stepOf(arrivals.atMs[i]!) === step; i++) {
      const at = admittedAtMs[i]!;
      if (at !== at) continue;
      if (n === scratch.length) scratch = grown(scratch);
      scratch[n++] = at - arrivals.atMs[i]!;
    }
    if (n === 0) continue;
    const waits = scratch.subarray(0, n).sort();
    waitP50Ms[step] = waits[Math.ceil(0.5 * n) - 1]!;
    waitP99Ms[step] = waits[Math.ceil(0.99 * n) - 1]!;
    waitMaxMs[step] = waits[n - 1]!;
  }
  return { waitP50Ms, waitP99Ms, waitMaxMs };
}

function grown(values: Float64Array): Float64Array {
  const bigger = new Float64Array(values.length * 2);
  bigger.set(values);
  return bigger;
}

/** Per step, the chart key's fullest state: over the states after its decisions in the step (as the engine folded them) and at the step's end. */
function statePerStep(run: LaneRun, stepOf: (ms: number) => number, options: SeriesOptions): Float64Array {
  const { fuller } = options.reading;
  const state = new Float64Array(options.steps);
  for (let s = 0; s < options.steps; s++) state[s] = run.stateAtStepEnd[s] ?? NaN;
  for (let s = 0; s < run.stateFullest.length; s++) {
    const value = run.stateFullest[s]!;
    if (value !== value) continue;
    const step = stepOf(s * options.bucketMs);
    const current = state[step]!;
    if (current !== current || (value - current) * fuller > 0) state[step] = value;
  }
  return state;
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
