/**
 * What the overload bench reads from a run's records: goodput (answered 200 within the client's
 * timeout), shedding (429 or 503, which only the gateway sends: the upstream answers 200 or
 * nothing), timeouts and failures, each counted by when the request was due.
 */
import { TIMED_OUT, type LoadRecords } from './load.js';

/** Outcome is how one request ended for its client. */
export type Outcome = 'good' | 'shed' | 'timeout' | 'error';

/** outcomeOf classifies a status from {@link LoadRecords}. */
export function outcomeOf(status: number): Outcome {
  if (status === 200) return 'good';
  if (status === 429 || status === 503) return 'shed';
  return status === TIMED_OUT ? 'timeout' : 'error';
}

/** WindowStats is what the requests due in one time window came to. */
export interface WindowStats {
  readonly sent: number;
  readonly good: number;
  readonly shed: number;
  readonly timedOut: number;
  readonly failed: number;
  /** Good answers per second of the window (requests due in it that were answered 200 in time). */
  readonly goodPerSecond: number;
  /**
   * The p99 latency of the requests not shed (answered, timed out or failed), in ms; Infinity when
   * more than 1% of them got no answer in time.
   */
  readonly admittedP99Ms: number;
  /** The p99 latency of the shed answers, in ms (NaN when none was shed). */
  readonly shedP99Ms: number;
  /** The p99 of how late the load generator sent its requests, in ms. */
  readonly lagP99Ms: number;
}

/** percentile returns the `q` quantile (0..1) of `sorted` (ascending), NaN for none. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/**
 * windowStats sums up the requests due in [fromMs, toMs) (ms after the run's start), of the tier
 * `tier` when given.
 */
export function windowStats(records: LoadRecords, fromMs: number, toMs: number, tier?: number): WindowStats {
  const admitted: number[] = [];
  const shedLatencies: number[] = [];
  const lags: number[] = [];
  let good = 0;
  let timedOut = 0;
  let failed = 0;
  for (let i = 0; i < records.dueMs.length; i++) {
    const due = records.dueMs[i]!;
    if (due < fromMs || due >= toMs || (tier !== undefined && records.tier[i] !== tier)) continue;
    lags.push(records.lagMs[i]!);
    const outcome = outcomeOf(records.status[i]!);
    if (outcome === 'shed') shedLatencies.push(records.latencyMs[i]!);
    else admitted.push(outcome === 'good' ? records.latencyMs[i]! : Infinity);
    if (outcome === 'good') good++;
    else if (outcome === 'timeout') timedOut++;
    else if (outcome === 'error') failed++;
  }
  const ascending = (a: number, b: number): number => a - b;
  return {
    sent: lags.length,
    good,
    shed: shedLatencies.length,
    timedOut,
    failed,
    goodPerSecond: (good * 1000) / (toMs - fromMs),
    admittedP99Ms: percentile(admitted.sort(ascending), 0.99),
    shedP99Ms: percentile(shedLatencies.sort(ascending), 0.99),
    lagP99Ms: percentile(lags.sort(ascending), 0.99),
  };
}

/**
 * goodputSeries returns good answers per second in consecutive `stepMs` buckets from 0 to `endMs`,
 * by when each answer came (so no bucket can exceed what the upstream serves).
 */
export function goodputSeries(records: LoadRecords, stepMs: number, endMs: number): number[] {
  const buckets = new Array<number>(Math.ceil(endMs / stepMs)).fill(0);
  for (let i = 0; i < records.dueMs.length; i++) {
    const b = Math.floor((records.dueMs[i]! + records.latencyMs[i]!) / stepMs);
    if (b < buckets.length && records.status[i] === 200) buckets[b]!++;
  }
  return buckets.map((n) => (n * 1000) / stepMs);
}

/**
 * recoveredAfterMs returns how long after `fromMs` the first `stepMs` bucket began from which every
 * bucket up to `toMs` had at least `share` of its requests answered 200 in time; undefined when none did.
 */
export function recoveredAfterMs(
  records: LoadRecords,
  fromMs: number,
  toMs: number,
  options: { stepMs: number; share: number },
): number | undefined {
  let recovered: number | undefined;
  for (let start = fromMs; start + options.stepMs <= toMs; start += options.stepMs) {
    const w = windowStats(records, start, start + options.stepMs);
    const ok = w.sent === 0 || w.good >= options.share * w.sent;
    if (!ok) recovered = undefined;
    else recovered ??= start - fromMs;
  }
  return recovered;
}
