/** Outcome counts per second over the last minute, for one route's rule. */
import type { RuleOutcome } from '../outcomes.js';

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
  'identity_refused',
  'identity_skipped',
  'shadow_identity_refused',
];

/**
 * RATE_GROUPS are the dashboard's columns: which outcomes each one adds up. A shadow rule's
 * decisions are split: how often it would admit, and how often it would refuse (the figure an
 * operator trying a rule in shadow needs), an absent or invalid identity included.
 */
export const RATE_GROUPS = {
  admitted: ['admitted', 'near_limit', 'queued'],
  limited: ['limited', 'queue_rejected', 'identity_refused'],
  wouldAdmit: ['shadow_admitted'],
  wouldRefuse: ['shadow_limited', 'shadow_identity_refused'],
  degraded: ['fail_open', 'fail_closed', 'fallback_admitted', 'fallback_limited'],
} as const satisfies Record<string, readonly RuleOutcome[]>;
/** RateGroup names one column of {@link RATE_GROUPS}. */
export type RateGroup = keyof typeof RATE_GROUPS;

/** SECONDS is how many one-second buckets are kept. */
export const SECONDS = 60;

/**
 * OutcomeSeries returns the count of each outcome in each of the last {@link SECONDS} whole
 * seconds, and in total since it was made. Memory: 60 doubles per outcome (a rule's 14 by
 * default; the rate limit service's own list for its descriptors). A second is the floor of
 * `timeMs / 1000`; a bucket is cleared when its second comes round again. Time going backwards
 * counts in the latest second seen. An outcome not in its list is not counted.
 *
 * @example
 * const series = new OutcomeSeries();
 * series.add('limited', clock.now());
 * series.perSecond('limited', 10, clock.now()); // 0.1
 */
export class OutcomeSeries<O extends string = RuleOutcome> {
  private readonly index: ReadonlyMap<string, number>;
  private readonly width: number;
  private readonly counts: Float64Array;
  private readonly totals: Float64Array;
  /** The second of the newest bucket written. */
  private latestSecond = -Infinity;

  /** @param outcomes the outcomes counted (default every rule outcome, {@link OUTCOMES}). */
  constructor(outcomes: readonly O[] = OUTCOMES as unknown as readonly O[]) {
    this.index = new Map(outcomes.map((o, i) => [o, i]));
    this.width = outcomes.length;
    this.counts = new Float64Array(SECONDS * this.width);
    this.totals = new Float64Array(this.width);
  }

  /** add counts one `outcome` at `timeMs`. */
  add(outcome: O, timeMs: number): void {
    const o = this.index.get(outcome);
    if (o === undefined) return;
    const second = this.advance(Math.max(0, Math.floor(timeMs / 1000)));
    this.counts[(second % SECONDS) * this.width + o]!++;
    this.totals[o]!++;
  }

  /** total returns every `outcome` counted since the start. */
  total(outcome: O): number {
    const o = this.index.get(outcome);
    return o === undefined ? 0 : this.totals[o]!;
  }

  /** perSecond returns the mean count of `outcomes` per second over the `seconds` whole seconds before `nowMs`'s second. */
  perSecond(outcomes: O | readonly O[], seconds: number, nowMs: number): number {
    const window = Math.min(Math.max(1, seconds), SECONDS - 1);
    const list: readonly O[] = typeof outcomes === 'string' ? [outcomes as O] : (outcomes as readonly O[]);
    const series = this.series(list, nowMs);
    let sum = 0;
    for (let i = series.length - 1 - window; i < series.length - 1; i++) sum += series[i]!;
    return sum / window;
  }

  /** series returns the per-second counts of `outcomes` added up, oldest first, the last being `nowMs`'s (unfinished) second. */
  series(outcomes: readonly O[], nowMs: number): number[] {
    const now = Math.floor(nowMs / 1000);
    const out: number[] = [];
    for (let s = now - SECONDS + 1; s <= now; s++) {
      let n = 0;
      if (s <= this.latestSecond && s > this.latestSecond - SECONDS && s >= 0) {
        for (const outcome of outcomes) {
          const o = this.index.get(outcome);
          if (o !== undefined) n += this.counts[(s % SECONDS) * this.width + o]!;
        }
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
      this.counts.fill(0, (s % SECONDS) * this.width, ((s % SECONDS) + 1) * this.width);
    this.latestSecond = second;
    return second;
  }
}
