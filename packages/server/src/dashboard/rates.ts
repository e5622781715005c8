/** Outcome counts per second over the last minute, for one route's rule. */
import type { RuleOutcome } from '../gateway/decide.js';

/** OUTCOMES lists every rule outcome in the order their counts are kept. */
export const OUTCOMES: readonly RuleOutcome[] = [
  'admitted',
  'near_limit',
  'limited',
  'shadow_admitted',
  'shadow_limited',
  'queued',
  'queue_rejected',
  'fail_open',
  'fail_closed',
  'fallback_admitted',
  'fallback_limited',
];
const INDEX = new Map<RuleOutcome, number>(OUTCOMES.map((o, i) => [o, i]));

/** RATE_GROUPS are the dashboard's columns: which outcomes each one adds up. */
export const RATE_GROUPS = {
  admitted: ['admitted', 'near_limit', 'queued'],
  limited: ['limited', 'queue_rejected'],
  shadow: ['shadow_admitted', 'shadow_limited'],
  degraded: ['fail_open', 'fail_closed', 'fallback_admitted', 'fallback_limited'],
} as const satisfies Record<string, readonly RuleOutcome[]>;
/** RateGroup names one column of {@link RATE_GROUPS}. */
export type RateGroup = keyof typeof RATE_GROUPS;

/** SECONDS is how many one-second buckets are kept. */
export const SECONDS = 60;

/**
 * OutcomeSeries returns the count of each outcome in each of the last {@link SECONDS} whole
 * seconds, and in total since it was made. Memory: 60 x 11 doubles. A second is the floor of
 * `timeMs / 1000`; a bucket is cleared when its second comes round again. Time going backwards
 * counts in the latest second seen.
 *
 * @example
 * const series = new OutcomeSeries();
 * series.add('limited', clock.now());
 * series.perSecond('limited', 10, clock.now()); // 0.1
 */
export class OutcomeSeries {
  private readonly counts = new Float64Array(SECONDS * OUTCOMES.length);
  private readonly totals = new Float64Array(OUTCOMES.length);
  /** The second of the newest bucket written. */
  private latestSecond = -Infinity;

  /** add counts one `outcome` at `timeMs`. */
  add(outcome: RuleOutcome, timeMs: number): void {
    const o = INDEX.get(outcome);
    if (o === undefined) return;
    const second = this.advance(Math.max(0, Math.floor(timeMs / 1000)));
    this.counts[(second % SECONDS) * OUTCOMES.length + o]!++;
    this.totals[o]!++;
  }

  /** total returns every `outcome` counted since the start. */
  total(outcome: RuleOutcome): number {
    return this.totals[INDEX.get(outcome)!]!;
  }

  /** perSecond returns the mean count of `outcomes` per second over the `seconds` whole seconds before `nowMs`'s second. */
  perSecond(outcomes: RuleOutcome | readonly RuleOutcome[], seconds: number, nowMs: number): number {
    const window = Math.min(Math.max(1, seconds), SECONDS - 1);
    const list = typeof outcomes === 'string' ? [outcomes] : outcomes;
    const series = this.series(list, nowMs);
    let sum = 0;
    for (let i = series.length - 1 - window; i < series.length - 1; i++) sum += series[i]!;
    return sum / window;
  }

  /** series returns the per-second counts of `outcomes` added up, oldest first, the last being `nowMs`'s (unfinished) second. */
  series(outcomes: readonly RuleOutcome[], nowMs: number): number[] {
    const now = Math.floor(nowMs / 1000);
    const out: number[] = [];
    for (let s = now - SECONDS + 1; s <= now; s++) {
      let n = 0;
      if (s <= this.latestSecond && s > this.latestSecond - SECONDS && s >= 0) {
        for (const outcome of outcomes) n += this.counts[(s % SECONDS) * OUTCOMES.length + INDEX.get(outcome)!]!;
      }
      out.push(n);
    }
    return out;
  }

  /** Clears the buckets of the seconds skipped since the latest one written; returns the second to write. */
  private advance(second: number): number {
    if (second <= this.latestSecond) return this.latestSecond;
    const from = Math.max(this.latestSecond + 1, second - SECONDS + 1);
    for (let s = from; s <= second; s++)
      this.counts.fill(0, (s % SECONDS) * OUTCOMES.length, ((s % SECONDS) + 1) * OUTCOMES.length);
    this.latestSecond = second;
    return second;
  }
}
