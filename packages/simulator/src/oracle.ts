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
  /**
   * Admitted cost beyond the policy's own promise: what an exact limiter holding `maxAdmitted` per
   * sliding window would have refused of the admitted stream (0 for a fixed window that admits
   * twice its limit across a boundary: that is what it promises).
   */
  readonly overPromise: number;
  /**
   * Admitted cost beyond the nominal limit in a sliding window: what an exact limiter holding
   * `limit` in every window (t - windowMs, t] would have refused of the admitted stream (a fixed
   * window's boundary burst counts here).
   */
  readonly overLimit: number;
  /** Requests refused while their key's window held room under the promise (undefined: no such promise). */
  readonly wronglyRefused: number | undefined;
  readonly waitMs: WaitPercentiles;
  /** The key with the most admitted cost. */
  readonly hottestKey: string;
}

/** KeyTimeline is one key's admissions in time order, as the oracle saw them. */
export interface KeyTimeline {
  readonly atMs: Float64Array;
  readonly costs: Float64Array;
}

/**
 * scoreLane returns the {@link Score} of a lane from each arrival's admission time (NaN:
 * refused) against `promise`, with one key's admissions (see below). Per
 * key, the admissions are put in time order and a window of `promise.windowMs` slides over them:
 * its largest sum is `maxInWindow`, the cost an exact limiter holding `maxAdmitted` would have
 * refused of them is `overAdmitted`, and a refusal at t is wrong when the admitted cost in
 * (t - windowMs, t] plus its own is at most `guaranteed`; `overLimit` is the same count as
 * `overPromise` against the nominal `limit`. The timeline returned is `chartKeyId`'s (default: the
 * hottest key's), for the rolling-window chart; `buffer` (at least one int per request), when
 * given, holds the working order of the admissions, so lanes scored one after the other share it. Exact, and linear in the requests
 * (plus a sort of any key admitted out of order); one typed array per measure, none per key.
 */
export function scoreLane(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  promise: PolicyPromise,
  chartKeyId?: number,
  buffer?: Int32Array,
): { score: Score; hottest: KeyTimeline } {
  const admissions = admissionsByKey(arrivals, admittedAtMs, buffer);
  const { offsets, order } = admissions;
  const windows = slideEveryKey(arrivals, admittedAtMs, admissions, promise);
  const score: Score = {
    requests: arrivals.length,
    admitted: order.length,
    refused: arrivals.length - order.length,
    admittedCost: windows.admittedCost,
    maxInWindow: windows.maxInWindow,
    overPromise: windows.overPromise,
    overLimit: windows.overLimit,
    wronglyRefused:
      promise.guaranteed === undefined ? undefined : countWronglyRefused(arrivals, admittedAtMs, admissions, promise),
    waitMs: percentiles(waitsOf(arrivals, admittedAtMs, order.length)),
    hottestKey: arrivals.keys[windows.hottestKeyId] ?? '',
  };
  const k = chartKeyId ?? windows.hottestKeyId;
  const segment = order.subarray(offsets[k]!, offsets[k + 1]!);
  return {
    score,
    hottest: {
      atMs: Float64Array.from(segment, (i) => admittedAtMs[i]!),
      costs: Float64Array.from(segment, (i) => arrivals.costs[i]!),
    },
  };
}

/** The window measures over every key: the largest sum, the cost over the promise and over the nominal limit, the total, the hottest key. */
function slideEveryKey(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  admissions: Admissions,
  promise: PolicyPromise,
): { maxInWindow: number; overPromise: number; overLimit: number; admittedCost: number; hottestKeyId: number } {
  const { offsets, order } = admissions;
  const scratch = new Int32Array(largestSegment(offsets));
  const nominal = { ...promise, maxAdmitted: promise.limit };
  const out = { maxInWindow: 0, overPromise: 0, overLimit: 0, admittedCost: 0, hottestKeyId: 0 };
  let hottestCost = -1;
  // One timeline object, moved from key to key: nothing allocated per key.
  const timeline = { atMs: admittedAtMs, costs: arrivals.costs, index: order, from: 0, to: 0 };
  for (let k = 0; k < arrivals.keys.length; k++) {
    timeline.from = offsets[k]!;
    timeline.to = offsets[k + 1]!;
    const slide = slideWindow(timeline, promise, scratch);
    out.maxInWindow = Math.max(out.maxInWindow, slide.max);
    out.overPromise += slide.over;
    // A key never above the nominal limit in any window has nothing over it.
    if (slide.max > nominal.maxAdmitted) out.overLimit += slideWindow(timeline, nominal, scratch).over;
    out.admittedCost += slide.total;
    if (slide.total > hottestCost) {
      hottestCost = slide.total;
      out.hottestKeyId = k;
    }
  }
  return out;
}

/**
 * Admissions grouped by key (a counting sort), as arrival indices: key k's are
 * `order[offsets[k]]` to `order[offsets[k+1] - 1]`, each key's in order of admission time. Indices
 * rather than copies of the times and costs: 4 bytes a request where copies took 16.
 */
interface Admissions {
  readonly offsets: Int32Array;
  readonly order: Int32Array;
}

/** IndexedTimeline is one key's admissions: `atMs[index[j]]` and `costs[index[j]]` for j in [from, to), in time order. */
interface IndexedTimeline {
  readonly atMs: Float64Array;
  readonly costs: Float64Array;
  readonly index: Int32Array;
  readonly from: number;
  readonly to: number;
}

function admissionsByKey(arrivals: Arrivals, admittedAtMs: Float64Array, buffer?: Int32Array): Admissions {
  // Here and below, `at === at` is false only for NaN: a refusal.
  const keyCount = arrivals.keys.length;
  const offsets = new Int32Array(keyCount + 1);
  for (let i = 0; i < arrivals.length; i++)
    if (admittedAtMs[i] === admittedAtMs[i]) offsets[arrivals.keyIds[i]! + 1]!++;
  for (let k = 0; k < keyCount; k++) offsets[k + 1]! += offsets[k]!;
  const total = offsets[keyCount]!;
  const next = offsets.slice(0, keyCount);
  const order = buffer !== undefined && buffer.length >= total ? buffer.subarray(0, total) : new Int32Array(total);
  for (let i = 0; i < arrivals.length; i++)
    if (admittedAtMs[i] === admittedAtMs[i]) order[next[arrivals.keyIds[i]!]!++] = i;
  for (let k = 0; k < keyCount; k++) sortSegment(order.subarray(offsets[k]!, offsets[k + 1]!), admittedAtMs);
  return { offsets, order };
}

function largestSegment(offsets: Int32Array): number {
  let largest = 0;
  for (let k = 0; k + 1 < offsets.length; k++) largest = Math.max(largest, offsets[k + 1]! - offsets[k]!);
  return largest;
}

/** Sorts one key's arrival indices by admission time (ties in arrival order), when they are not in order already. */
function sortSegment(segment: Int32Array, admittedAtMs: Float64Array): void {
  for (let j = 1; j < segment.length; j++) {
    if (admittedAtMs[segment[j]!]! < admittedAtMs[segment[j - 1]!]!) {
      segment.sort((a, b) => admittedAtMs[a]! - admittedAtMs[b]! || a - b);
      return;
    }
  }
}

/**
 * Slides (t - windowMs, t] over one key's admissions: the largest sum, the total, and the cost
 * over the promise. That last is what an exact limiter holding the promise (at most
 * `maxAdmitted` in any window) would have refused of this stream, deciding in time order: it
 * keeps each admission that fits among those it kept, and counts the others. For unit costs no
 * smaller set of removals leaves every window within the promise.
 */
function slideWindow(
  timeline: IndexedTimeline,
  promise: PolicyPromise,
  kept: Int32Array = new Int32Array(timeline.to - timeline.from),
): { max: number; over: number; total: number } {
  const { atMs, costs, index, from, to } = timeline;
  const windowMs = promise.windowMs;
  const slack = 1e-9 * Math.max(1, promise.maxAdmitted);
  let keptHead = 0;
  let keptTail = 0;
  let keptSum = 0;
  let sum = 0;
  let left = from;
  let max = 0;
  let over = 0;
  let total = 0;
  for (let j = from; j < to; j++) {
    const t = atMs[index[j]!]!;
    const cost = costs[index[j]!]!;
    while (atMs[index[left]!]! <= t - windowMs) sum -= costs[index[left++]!]!;
    while (keptHead < keptTail && atMs[kept[keptHead]!]! <= t - windowMs) keptSum -= costs[kept[keptHead++]!]!;
    sum += cost;
    total += cost;
    if (sum > max) max = sum;
    if (keptSum + cost > promise.maxAdmitted + slack) {
      over += cost;
    } else {
      kept[keptTail++] = index[j]!;
      keptSum += cost;
    }
  }
  return { max, over, total };
}

/**
 * Refusals made while their key's window, admissions up to then, held room under `guaranteed`.
 * One pass in arrival order, with a window (two cursors and a sum) per key.
 */
function countWronglyRefused(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  admissions: Admissions,
  promise: PolicyPromise,
): number {
  const guaranteed = promise.guaranteed!;
  const slack = 1e-9 * Math.max(1, guaranteed);
  const { offsets, order } = admissions;
  const { costs } = arrivals;
  const left = offsets.slice(0, arrivals.keys.length);
  const right = offsets.slice(0, arrivals.keys.length);
  const sums = new Float64Array(arrivals.keys.length);
  let wrong = 0;
  for (let i = 0; i < arrivals.length; i++) {
    if (admittedAtMs[i] === admittedAtMs[i]) continue;
    const k = arrivals.keyIds[i]!;
    const t = arrivals.atMs[i]!;
    const end = offsets[k + 1]!;
    let sum = sums[k]!;
    let r = right[k]!;
    let l = left[k]!;
    for (; r < end && admittedAtMs[order[r]!]! <= t; r++) sum += costs[order[r]!]!;
    for (; l < r && admittedAtMs[order[l]!]! <= t - promise.windowMs; l++) sum -= costs[order[l]!]!;
    sums[k] = sum;
    right[k] = r;
    left[k] = l;
    if (sum + arrivals.costs[i]! <= guaranteed + slack) wrong++;
  }
  return wrong;
}

function waitsOf(arrivals: Arrivals, admittedAtMs: Float64Array, admitted: number): Float64Array {
  if (!anyWaited(arrivals, admittedAtMs)) return new Float64Array(admitted > 0 ? 1 : 0);
  const waits = new Float64Array(admitted);
  let j = 0;
  let anyWait = false;
  for (let i = 0; i < arrivals.length; i++) {
    const at = admittedAtMs[i]!;
    if (at === at) {
      const wait = at - arrivals.atMs[i]!;
      waits[j++] = wait;
      if (wait !== 0) anyWait = true;
    }
  }
  // Refuse mode admits at once: all zeros are sorted already.
  return anyWait ? waits.sort() : waits;
}

/** Whether any admitted request waited: refuse mode admits at once, and needs no array of waits. */
function anyWaited(arrivals: Arrivals, admittedAtMs: Float64Array): boolean {
  for (let i = 0; i < arrivals.length; i++) if (admittedAtMs[i]! > arrivals.atMs[i]!) return true;
  return false;
}

/** percentiles returns nearest-rank percentiles of `sorted` (ascending); all 0 when empty. */
export function percentiles(sorted: Float64Array): WaitPercentiles {
  const rank = (p: number): number =>
    sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: rank(1) };
}

/**
 * maxInAnyWindow returns the most cost in any window (t - windowMs, t] of `timeline` (admissions
 * in time order): the oracle's measure, for checking a bound over other window lengths.
 */
export function maxInAnyWindow(timeline: KeyTimeline, windowMs: number): number {
  const index = Int32Array.from({ length: timeline.atMs.length }, (_, j) => j);
  return slideWindow(
    { atMs: timeline.atMs, costs: timeline.costs, index, from: 0, to: index.length },
    { windowMs, maxAdmitted: Infinity, guaranteed: undefined, limit: 0 },
  ).max;
}
