import type { Arrivals } from './arrivals.js';
import type { PolicyPromise } from './policy.js';

/** WaitPercentiles are the waits of admitted requests, in ms (0 when nothing was admitted). */
export interface WaitPercentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Score is how one lane did, measured exactly from every request's outcome. */
export interface Score {
  readonly requests: number;
  readonly admitted: number;
  readonly refused: number;
  /** Sum of the admitted requests' costs. */
  readonly admittedCost: number;
  /** The most cost admitted on one key in any window of the promise's length: (t - windowMs, t]. */
  readonly maxInWindow: number;
  /** Admitted cost beyond the promise: what an exact limiter holding `maxAdmitted` per window would have refused of the admitted stream. */
  readonly overAdmitted: number;
  /** Requests refused while their key's window held room under the promise (undefined: no such promise). */
  readonly wronglyRefused: number | undefined;
  readonly waitMs: WaitPercentiles;
  /** The key with the most admitted cost, whose rolling window the charts draw. */
  readonly hottestKey: string;
}

/** KeyTimeline is one key's admissions in time order, as the oracle saw them. */
export interface KeyTimeline {
  readonly atMs: Float64Array;
  readonly costs: Float64Array;
}

/**
 * scoreLane returns the {@link Score} of a lane from each arrival's admission time (NaN: refused)
 * against `promise`, with the hottest key's admissions for the rolling-window chart. Per key, the
 * admissions are put in time order and a window of `promise.windowMs` slides over them: its
 * largest sum is `maxInWindow`, each cost that takes it past `maxAdmitted` is over-admitted, and
 * a refusal at t is wrong when the admitted cost in (t - windowMs, t] plus its own is at most
 * `guaranteed`. Exact, and linear in the requests (plus a sort of any key admitted out of order).
 */
export function scoreLane(arrivals: Arrivals, admittedAtMs: Float64Array, promise: PolicyPromise): { score: Score; hottest: KeyTimeline } {
  const groups = groupByKey(arrivals);
  let maxInWindow = 0;
  let overAdmitted = 0;
  let wronglyRefused = 0;
  let hottest: { key: number; cost: number; timeline: KeyTimeline } = { key: 0, cost: -1, timeline: { atMs: new Float64Array(0), costs: new Float64Array(0) } };
  for (let k = 0; k < arrivals.keys.length; k++) {
    const members = groups.order.subarray(groups.offsets[k]!, groups.offsets[k + 1]!);
    const timeline = admissionsOf(members, admittedAtMs, arrivals.costs);
    const slide = slideWindow(timeline, promise);
    maxInWindow = Math.max(maxInWindow, slide.max);
    overAdmitted += slide.over;
    if (promise.guaranteed !== undefined) wronglyRefused += countWronglyRefused(members, arrivals, admittedAtMs, timeline, promise);
    if (slide.total > hottest.cost) hottest = { key: k, cost: slide.total, timeline };
  }
  const waits = waitsOf(arrivals, admittedAtMs);
  const score: Score = {
    requests: arrivals.length,
    admitted: waits.length,
    refused: arrivals.length - waits.length,
    admittedCost: sumAdmitted(arrivals, admittedAtMs),
    maxInWindow,
    overAdmitted,
    wronglyRefused: promise.guaranteed === undefined ? undefined : wronglyRefused,
    waitMs: percentiles(waits),
    hottestKey: arrivals.keys[hottest.key] ?? '',
  };
  return { score, hottest: hottest.timeline };
}

/** Arrival indices grouped by key (a counting sort): key k's are order[offsets[k]..offsets[k+1]), in arrival order. */
function groupByKey(arrivals: Arrivals): { order: Int32Array; offsets: Int32Array } {
  const offsets = new Int32Array(arrivals.keys.length + 1);
  for (let i = 0; i < arrivals.length; i++) offsets[arrivals.keyIds[i]! + 1]!++;
  for (let k = 0; k < arrivals.keys.length; k++) offsets[k + 1]! += offsets[k]!;
  const next = offsets.slice(0, arrivals.keys.length);
  const order = new Int32Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++) order[next[arrivals.keyIds[i]!]!++] = i;
  return { order, offsets };
}

/** One key's admissions sorted by admission time (ties in arrival order). */
function admissionsOf(members: Int32Array, admittedAtMs: Float64Array, costs: Float64Array): KeyTimeline {
  const admitted: number[] = [];
  let sorted = true;
  for (const i of members) {
    if (Number.isNaN(admittedAtMs[i]!)) continue;
    if (admitted.length > 0 && admittedAtMs[i]! < admittedAtMs[admitted[admitted.length - 1]!]!) sorted = false;
    admitted.push(i);
  }
  if (!sorted) admitted.sort((a, b) => admittedAtMs[a]! - admittedAtMs[b]! || a - b);
  const atMs = new Float64Array(admitted.length);
  const out = new Float64Array(admitted.length);
  for (let j = 0; j < admitted.length; j++) {
    atMs[j] = admittedAtMs[admitted[j]!]!;
    out[j] = costs[admitted[j]!]!;
  }
  return { atMs, costs: out };
}

/**
 * Slides (t - windowMs, t] over one key's admissions: the largest sum, the total, and the cost
 * over the promise. That last is what an exact limiter holding the promise (at most
 * `maxAdmitted` in any window) would have refused of this stream, deciding in time order: it
 * keeps each admission that fits among those it kept, and counts the others. For unit costs no
 * smaller set of removals leaves every window within the promise.
 */
function slideWindow(timeline: KeyTimeline, promise: PolicyPromise): { max: number; over: number; total: number } {
  const { atMs, costs } = timeline;
  const windowMs = promise.windowMs;
  const slack = 1e-9 * Math.max(1, promise.maxAdmitted);
  const kept = new Int32Array(atMs.length);
  let keptHead = 0;
  let keptTail = 0;
  let keptSum = 0;
  let sum = 0;
  let left = 0;
  let max = 0;
  let over = 0;
  let total = 0;
  for (let j = 0; j < atMs.length; j++) {
    const t = atMs[j]!;
    const cost = costs[j]!;
    while (atMs[left]! <= t - windowMs) sum -= costs[left++]!;
    while (keptHead < keptTail && atMs[kept[keptHead]!]! <= t - windowMs) keptSum -= costs[kept[keptHead++]!]!;
    sum += cost;
    total += cost;
    if (sum > max) max = sum;
    if (keptSum + cost > promise.maxAdmitted + slack) {
      over += cost;
    } else {
      kept[keptTail++] = j;
      keptSum += cost;
    }
  }
  return { max, over, total };
}

/** Refusals of one key made while its window, admissions up to then, held room under `guaranteed`. */
function countWronglyRefused(members: Int32Array, arrivals: Arrivals, admittedAtMs: Float64Array, timeline: KeyTimeline, promise: PolicyPromise): number {
  const guaranteed = promise.guaranteed!;
  const slack = 1e-9 * Math.max(1, guaranteed);
  let wrong = 0;
  let sum = 0;
  let left = 0;
  let right = 0;
  for (const i of members) {
    if (!Number.isNaN(admittedAtMs[i]!)) continue;
    const t = arrivals.atMs[i]!;
    for (; right < timeline.atMs.length && timeline.atMs[right]! <= t; right++) sum += timeline.costs[right]!;
    for (; left < right && timeline.atMs[left]! <= t - promise.windowMs; left++) sum -= timeline.costs[left]!;
    if (sum + arrivals.costs[i]! <= guaranteed + slack) wrong++;
  }
  return wrong;
}

function sumAdmitted(arrivals: Arrivals, admittedAtMs: Float64Array): number {
  let sum = 0;
  for (let i = 0; i < arrivals.length; i++) if (!Number.isNaN(admittedAtMs[i]!)) sum += arrivals.costs[i]!;
  return sum;
}

function waitsOf(arrivals: Arrivals, admittedAtMs: Float64Array): Float64Array {
  const waits: number[] = [];
  for (let i = 0; i < arrivals.length; i++) {
    const at = admittedAtMs[i]!;
    if (!Number.isNaN(at)) waits.push(at - arrivals.atMs[i]!);
  }
  return Float64Array.from(waits).sort();
}

/** percentiles returns nearest-rank percentiles of `sorted` (ascending); all 0 when empty. */
export function percentiles(sorted: Float64Array): WaitPercentiles {
  const rank = (p: number): number => (sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!);
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: rank(1) };
}

/**
 * maxInAnyWindow returns the most cost in any window (t - windowMs, t] of `timeline` (admissions
 * in time order): the oracle's measure, for checking a bound over other window lengths.
 */
export function maxInAnyWindow(timeline: KeyTimeline, windowMs: number): number {
  return slideWindow(timeline, { windowMs, maxAdmitted: Infinity, guaranteed: undefined, limit: 0 }).max;
}
