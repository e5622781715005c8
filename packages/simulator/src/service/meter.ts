/** TierSeries are one tier's counts per chart step, each call counted in the step it was sent. */
export interface TierSeries {
  /** Calls sent (retries included). */
  readonly sent: Float64Array;
  /** Calls answered within the client's timeout (counted in the step they were sent). */
  readonly answered: Float64Array;
  /** Calls the protection turned away at once. */
  readonly shed: Float64Array;
  /** Calls admitted whose client gave up before the answer. */
  readonly timedOut: Float64Array;
  /** Requests: first attempts only. */
  readonly requests: Float64Array;
  /** Requests answered in time on some attempt, in the step of their first attempt. */
  readonly succeeded: Float64Array;
  /** Nearest-rank median latency of the admitted calls sent in the step, as their client saw it (the timeout when it gave up), in ms; NaN when none. */
  readonly p50Ms: Float64Array;
  /** The same, 99th percentile. */
  readonly p99Ms: Float64Array;
}

/** LevelSeries are time-weighted means per chart step of quantities that change at events. */
export interface LevelSeries {
  /** The protection's limit (NaN without one). */
  readonly limit: Float64Array;
  /** Calls admitted whose client still waits: the limiter's in-flight count. */
  readonly inFlight: Float64Array;
  /** Calls in the service, queued or being worked on, abandoned ones included. */
  readonly backlog: Float64Array;
}

/** Levels are the three quantities of {@link LevelSeries} at one moment. */
export interface Levels {
  readonly limit: number;
  readonly inFlight: number;
  readonly backlog: number;
}

/** What the meter cuts time into: chart steps of `bucketMs`, and phases starting at `phaseStartsMs` (ascending, the first 0) up to `endMs`. */
export interface MeterCut {
  readonly bucketMs: number;
  readonly steps: number;
  readonly phaseStartsMs: readonly number[];
  /** The end of the last phase: the scenario's duration. */
  readonly endMs: number;
}

/**
 * LaneMeter counts one lane's calls per tier and chart step (by the time each was sent), keeps
 * the admitted calls' latencies for percentiles, integrates the levels over time, and counts
 * goodput (answers in time, by the time of the answer) per step and per phase, exactly (phases
 * need not fall on step edges).
 */
export class LaneMeter {
  private readonly counts: Array<Record<Exclude<keyof TierSeries, 'p50Ms' | 'p99Ms'>, Float64Array>>;
  private readonly latencies: number[][][];
  private readonly sums: Record<keyof LevelSeries, Float64Array>;
  private lastMs = 0;
  /** Answers within the timeout per step, by the time of the answer (later ones are left out). */
  readonly goodput: Float64Array;
  /** The same per phase. */
  readonly phaseGoodput: Float64Array;

  /** Creates an empty meter for `tiers` tiers. */
  constructor(
    tiers: number,
    private readonly cut: MeterCut,
  ) {
    const zeros = (): Float64Array => new Float64Array(cut.steps);
    this.counts = Array.from({ length: tiers }, () => ({
      sent: zeros(),
      answered: zeros(),
      shed: zeros(),
      timedOut: zeros(),
      requests: zeros(),
      succeeded: zeros(),
    }));
    this.latencies = Array.from({ length: tiers }, () => Array.from({ length: cut.steps }, () => []));
    this.sums = { limit: zeros(), inFlight: zeros(), backlog: zeros() };
    this.goodput = zeros();
    this.phaseGoodput = new Float64Array(cut.phaseStartsMs.length);
  }

  /** count adds one to `kind` of `tier` in the step of `sentMs`. */
  count(kind: 'sent' | 'shed' | 'requests' | 'succeeded', tier: number, sentMs: number): void {
    this.counts[tier]![kind][this.stepOf(sentMs)]!++;
  }

  /** answered records the answer at `answerMs`, within the timeout, of an admitted call sent at `sentMs`. */
  answered(tier: number, sentMs: number, answerMs: number): void {
    const step = this.stepOf(sentMs);
    this.counts[tier]!.answered[step]!++;
    this.latencies[tier]![step]!.push(answerMs - sentMs);
    if (answerMs < this.cut.steps * this.cut.bucketMs) this.goodput[this.stepOf(answerMs)]!++;
    if (answerMs < this.cut.endMs) this.phaseGoodput[phaseOf(this.cut.phaseStartsMs, answerMs)]!++;
  }

  /** timedOut records an admitted call whose client gave up after `timeoutMs`. */
  timedOut(tier: number, sentMs: number, timeoutMs: number): void {
    const step = this.stepOf(sentMs);
    this.counts[tier]!.timedOut[step]!++;
    this.latencies[tier]![step]!.push(timeoutMs);
  }

  /** advance integrates `levels`, which held from the last call of advance until `toMs` (times past the last step are left out). */
  advance(toMs: number, levels: Levels): void {
    const { bucketMs, steps } = this.cut;
    const endMs = Math.min(toMs, steps * bucketMs);
    while (this.lastMs < endMs) {
      let step = Math.floor(this.lastMs / bucketMs);
      if ((step + 1) * bucketMs <= this.lastMs) step++;
      const stepEndMs = Math.min(endMs, (step + 1) * bucketMs);
      const dt = stepEndMs - this.lastMs;
      this.sums.limit[step]! += levels.limit * dt;
      this.sums.inFlight[step]! += levels.inFlight * dt;
      this.sums.backlog[step]! += levels.backlog * dt;
      this.lastMs = stepEndMs;
    }
  }

  /** tiers returns each tier's series, percentiles computed. */
  tiers(): TierSeries[] {
    return this.counts.map((c, tier) => {
      const p50Ms = new Float64Array(this.cut.steps);
      const p99Ms = new Float64Array(this.cut.steps);
      for (let s = 0; s < this.cut.steps; s++) {
        const sorted = this.latencies[tier]![s]!.sort((a, b) => a - b);
        p50Ms[s] = nearestRank(sorted, 0.5);
        p99Ms[s] = nearestRank(sorted, 0.99);
      }
      return { ...c, p50Ms, p99Ms };
    });
  }

  /** latenciesOf returns every latency recorded for `tier`, ascending. */
  latenciesOf(tier: number): number[] {
    return this.latencies[tier]!.flat().sort((a, b) => a - b);
  }

  /** levels returns the time-weighted mean of each level per step. */
  levels(): LevelSeries {
    const mean = (sums: Float64Array): Float64Array => sums.map((v) => v / this.cut.bucketMs);
    return { limit: mean(this.sums.limit), inFlight: mean(this.sums.inFlight), backlog: mean(this.sums.backlog) };
  }

  private stepOf(ms: number): number {
    return Math.min(this.cut.steps - 1, Math.max(0, Math.floor(ms / this.cut.bucketMs)));
  }
}

/** nearestRank returns the nearest-rank `q` quantile of `sorted` (ascending), NaN when it is empty. */
export function nearestRank(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

/** phaseOf returns the index of the phase holding `ms`: the last start at or before it. */
export function phaseOf(startsMs: readonly number[], ms: number): number {
  let lo = 0;
  let hi = startsMs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (startsMs[mid]! <= ms) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
