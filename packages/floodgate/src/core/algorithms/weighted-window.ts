import { checkShare, countSlack, type Algorithm } from '../algorithm.js';
import { makeDecision, type Decision } from '../decision.js';
import { checkCost } from '../validate.js';

// Cells: [0] start of the current window (-Infinity: none), [1] previous window's count, [2] current's.
const START = 0;
const PREV = 1;
const CURR = 2;

/** WEIGHTED_WINDOW is the {@link Algorithm.kind} of `slidingWindowCounter`'s estimating form (no `subWindows`). */
export const WEIGHTED_WINDOW: unique symbol = Symbol('weighted-window');

/**
 * WeightedWindow is the sliding window counter's estimating form: windows aligned to the epoch,
 * and the previous window's count weighted by how much of it the sliding window still covers.
 */
export class WeightedWindow implements Algorithm {
  readonly name = 'sliding-window-counter';
  readonly kind = WEIGHTED_WINDOW;
  readonly width = 3;
  readonly params: Readonly<Record<string, number>>;
  // Scratch for the window as seen at a given time; read right after `view` (no allocation).
  private viewStart = 0;
  private viewPrev = 0;
  private viewCurr = 0;

  /** Tolerance for comparing counts and costs: {@link countSlack} of the limit. */
  private readonly slack: number;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    this.slack = countSlack(limit);
    this.params = { limit, windowMs };
  }

  init(cells: Float64Array, at: number): void {
    cells[at + START] = -Infinity;
    cells[at + PREV] = 0;
    cells[at + CURR] = 0;
  }

  /** Rolls the recorded windows forward to nowMs into the view fields; returns the estimate. */
  private view(cells: Float64Array, at: number, nowMs: number): number {
    const recorded = cells[at + START]!;
    const start = Math.max(Math.floor(nowMs / this.windowMs) * this.windowMs, recorded);
    this.viewStart = start;
    if (start === recorded) {
      this.viewPrev = cells[at + PREV]!;
      this.viewCurr = cells[at + CURR]!;
    } else {
      this.viewPrev = start === recorded + this.windowMs ? cells[at + CURR]! : 0;
      this.viewCurr = 0;
    }
    // A clock behind the window's start counts the previous window in full: never less.
    const covered = 1 - Math.max(0, nowMs - start) / this.windowMs;
    return this.viewPrev * covered + this.viewCurr;
  }

  /** When the same cost would fit, if it does not now. */
  private retryAfterMs(nowMs: number, cost: number): number {
    const { limit, windowMs, viewStart: start, viewPrev: prev, viewCurr: curr } = this;
    if (curr + cost <= limit + this.slack) {
      return start + windowMs * (1 - (limit - curr - cost) / prev) - nowMs;
    }
    // Only once the current window has become the previous one and decayed enough.
    return start + windowMs + windowMs * (1 - (limit - cost) / curr) - nowMs;
  }

  private answer(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const estimate = this.view(cells, at, nowMs);
    const allowed = estimate + cost <= this.limit + this.slack;
    const curr = allowed ? this.viewCurr + cost : this.viewCurr;
    const start = this.viewStart;
    const resetMs =
      curr > 0 ? start + 2 * this.windowMs - nowMs : this.viewPrev > 0 ? start + this.windowMs - nowMs : 0;
    return makeDecision(
      allowed,
      this.limit,
      this.limit - (allowed ? estimate + cost : estimate),
      allowed ? 0 : this.retryAfterMs(nowMs, cost),
      resetMs,
    );
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const decision = this.answer(cells, at, nowMs, cost);
    if (decision.allowed) this.store(cells, at, this.viewCurr + cost);
    return decision;
  }

  private store(cells: Float64Array, at: number, curr: number): void {
    cells[at + START] = this.viewStart;
    cells[at + PREV] = this.viewPrev;
    cells[at + CURR] = curr;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    return this.answer(cells, at, nowMs, cost);
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    this.view(cells, at, nowMs);
    this.store(cells, at, Math.max(0, this.viewCurr - cost));
  }

  restAtMs(cells: Float64Array, at: number): number {
    const start = cells[at + START]!;
    if (cells[at + CURR]! > 0) return start + 2 * this.windowMs;
    return cells[at + PREV]! > 0 ? start + this.windowMs : -Infinity;
  }

  scaled(share: number): Algorithm {
    return new WeightedWindow(this.limit * checkShare(share, 'share'), this.windowMs);
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name);
  }
}
