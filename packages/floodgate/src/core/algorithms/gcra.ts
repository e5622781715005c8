import { checkShare, TIME_EPSILON_MS, type Algorithm } from '../algorithm.js';
import { ceilMs, makeDecision, type Decision } from '../decision.js';
import { checkCost, positiveInteger, positiveNumber, requireObject } from '../validate.js';

/** GcraOptions configures {@link gcra}, with redis-cell's meaning. */
export interface GcraOptions {
  /** Cost admitted per `periodMs` on average. */
  rate: number;
  /** The period `rate` is counted over, in milliseconds. */
  periodMs: number;
  /** Extra cost admitted at once beyond one unit: a fresh key admits `maxBurst + 1` at one instant. */
  maxBurst: number;
}

// Cells: [0] theoretical arrival time (TAT) in ms; -Infinity for a fresh key.
const TAT = 0;

/** GCRA is the {@link Algorithm.kind} of {@link gcra}'s policies. */
export const GCRA: unique symbol = Symbol('gcra');

class Gcra implements Algorithm {
  readonly name = 'gcra';
  readonly kind = GCRA;
  readonly width = 1;
  readonly limit: number;
  readonly params: Readonly<Record<string, number>>;
  /** Emission interval: ms one unit of cost occupies. */
  private readonly intervalMs: number;
  /** Delay variation tolerance: how far ahead of now the TAT may run, in ms. */
  private readonly toleranceMs: number;

  /** The time `limit` units take to be restored: `limit` emission intervals, in ms. */
  readonly windowMs: number;

  constructor(rate: number, periodMs: number, maxBurst: number) {
    this.params = { rate, periodMs, maxBurst };
    this.limit = maxBurst + 1;
    this.intervalMs = periodMs / rate;
    this.toleranceMs = this.intervalMs * this.limit;
    this.windowMs = (this.limit * periodMs) / rate;
  }

  /** scaled takes `share` of the rate and of the burst (`maxBurst + 1`, rounded, at least 1). */
  scaled(share: number): Algorithm {
    checkShare(share, 'share');
    const p = this.params;
    return new Gcra(p.rate! * share, p.periodMs!, Math.max(0, Math.round(this.limit * share) - 1));
  }

  init(cells: Float64Array, at: number): void {
    cells[at + TAT] = -Infinity;
  }

  /** The decision for `cost` as of nowMs, as if charged when admitted. */
  private answer(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const tat = Math.max(cells[at + TAT]!, nowMs);
    const newTat = tat + this.intervalMs * cost;
    const allowAtMs = newTat - this.toleranceMs;
    const allowed = cost === 0 || nowMs + TIME_EPSILON_MS >= allowAtMs;
    const settled = allowed ? newTat : tat;
    return makeDecision(
      allowed,
      this.limit,
      (nowMs - (settled - this.toleranceMs) + TIME_EPSILON_MS) / this.intervalMs,
      // The first time admitted under the same tolerance as the check above.
      allowAtMs - TIME_EPSILON_MS - nowMs,
      settled - nowMs,
    );
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const decision = this.answer(cells, at, nowMs, cost);
    if (decision.allowed && cost > 0) {
      cells[at + TAT] = Math.max(cells[at + TAT]!, nowMs) + this.intervalMs * cost;
    }
    return decision;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    return this.answer(cells, at, nowMs, cost);
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const tat = cells[at + TAT]!;
    if (tat <= nowMs) return; // nothing outstanding to give back
    cells[at + TAT] = Math.max(nowMs, tat - this.intervalMs * cost);
  }

  reserve(cells: Float64Array, at: number, nowMs: number, cost: number, maxWaitMs: number): number {
    const tat = Math.max(cells[at + TAT]!, nowMs);
    // The same wait a refusal's retryAfterMs gives, in whole ms.
    const waitMs = ceilMs(tat + this.intervalMs * cost - this.toleranceMs - TIME_EPSILON_MS - nowMs);
    if (waitMs > maxWaitMs) return -1;
    // Book what consuming at the due time would: the TAT advances from then, not from earlier.
    cells[at + TAT] = Math.max(tat, nowMs + waitMs) + this.intervalMs * cost;
    return waitMs;
  }

  restAtMs(cells: Float64Array, at: number): number {
    return cells[at + TAT]!;
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name);
  }
}

/**
 * gcra returns the generic cell rate algorithm {@link Algorithm}, with redis-cell's meaning: `rate`
 * units per `periodMs` on average, and bursts of up to `maxBurst + 1` at once. Its state is one
 * number per key (the theoretical arrival time), so it is the lightest smooth policy.
 *
 * `CL.THROTTLE key 15 30 60` is `gcra({ maxBurst: 15, rate: 30, periodMs: 60_000 })`.
 *
 * Time faults: the TAT is only ever moved forward (a refund moves it back by what it gives, never
 * before now), and a clock behind it only makes a request wait longer, so a clock stepping back in
 * one process admits nothing extra. Nodes whose clocks are up to `skewSpreadMs` apart admit at
 * most `rate * skewSpreadMs / periodMs` more in any span than one clock would (the fastest clock
 * reaches the TAT that much early), once per span, not per window. See docs/time.md.
 *
 * @throws FloodgateError `INVALID_OPTION` for a rate or periodMs that is not a finite number above
 * 0, or a maxBurst that is not a whole number of at least 0.
 * @example
 * const limiter = new Limiter({ policy: gcra({ rate: 30, periodMs: 60_000, maxBurst: 15 }) });
 */
export function gcra(options: GcraOptions): Algorithm {
  const o = requireObject<GcraOptions>(options, 'gcra');
  const rate = positiveNumber(o.rate, 'gcra.rate');
  const periodMs = positiveNumber(o.periodMs, 'gcra.periodMs');
  const maxBurst = positiveInteger(o.maxBurst, 'gcra.maxBurst', 0);
  return new Gcra(rate, periodMs, maxBurst);
}
