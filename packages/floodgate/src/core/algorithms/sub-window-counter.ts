import { checkShare, countSlack, type Algorithm } from '../algorithm.js';
import { makeDecision, type Decision } from '../decision.js';
import { checkCost } from '../validate.js';

// Cells: [0] number of the newest recorded sub-window (-Infinity: none), [1 .. 1 + n) counts,
// sub-window k at 1 + (k mod n).
const NEWEST = 0;
const COUNTS = 1;

/** SUB_WINDOW_COUNTER is the {@link Algorithm.kind} of `slidingWindowCounter`'s form with `subWindows`. */
export const SUB_WINDOW_COUNTER: unique symbol = Symbol('sub-window-counter');

/**
 * SubWindowCounter is the sliding window counter's exact-to-a-sub-window form: the window is cut
 * into `subWindows` aligned sub-windows whose counts are summed. A finer cut is more precise and
 * costs one cell per sub-window.
 */
export class SubWindowCounter implements Algorithm {
  readonly name = 'sliding-window-counter';
  readonly kind = SUB_WINDOW_COUNTER;
  readonly width: number;
  readonly params: Readonly<Record<string, number>>;
  private readonly subWindowMs: number;

  /** Tolerance for comparing counts and costs: {@link countSlack} of the limit. */
  private readonly slack: number;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly subWindows: number,
  ) {
    this.width = COUNTS + subWindows;
    this.subWindowMs = windowMs / subWindows;
    this.slack = countSlack(limit);
    this.params = { limit, windowMs, subWindows };
  }

  /** Cell offset of sub-window k's count: k modulo n, never negative (times before 1970 are valid). */
  private ring(k: number): number {
    const r = k % this.subWindows;
    return r < 0 ? r + this.subWindows : r;
  }

  init(cells: Float64Array, at: number): void {
    cells[at + NEWEST] = -Infinity;
  }

  /** Number of the sub-window nowMs counts in; a clock gone back stays in the newest recorded. */
  private current(cells: Float64Array, at: number, nowMs: number): number {
    return Math.max(Math.floor(nowMs / this.subWindowMs), cells[at + NEWEST]!);
  }

  /** Count recorded for sub-window k, or 0 when k is outside the recorded ones or out of the window. */
  private countOf(cells: Float64Array, at: number, k: number, current: number): number {
    const newest = cells[at + NEWEST]!;
    if (k > newest || k <= newest - this.subWindows || k <= current - this.subWindows) return 0;
    return cells[at + COUNTS + this.ring(k)]!;
  }

  private total(cells: Float64Array, at: number, current: number): number {
    let sum = 0;
    for (let k = current - this.subWindows + 1; k <= current; k++) sum += this.countOf(cells, at, k, current);
    return sum;
  }

  private answer(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const current = this.current(cells, at, nowMs);
    const counted = this.total(cells, at, current);
    const allowed = counted + cost <= this.limit + this.slack;
    let retryAfterMs = 0;
    let newest = allowed && cost > 0 ? current : -Infinity;
    const n = this.subWindows;
    // Walk from the oldest sub-window: when it leaves, its count is freed.
    let freed = 0;
    for (let k = current - n + 1; k <= current; k++) {
      const count = this.countOf(cells, at, k, current);
      if (count > 0) newest = Math.max(newest, k);
      freed += count;
      if (!allowed && retryAfterMs === 0 && counted - freed + cost <= this.limit + this.slack) {
        retryAfterMs = (k + n) * this.subWindowMs - nowMs;
      }
    }
    const after = allowed ? counted + cost : counted;
    const resetMs = after > 0 ? (newest + n) * this.subWindowMs - nowMs : 0;
    return makeDecision(allowed, this.limit, this.limit - after, retryAfterMs, resetMs);
  }

  /** Rolls the recorded sub-windows forward to `current`, clearing those that left the window. */
  private roll(cells: Float64Array, at: number, current: number): void {
    const newest = cells[at + NEWEST]!;
    if (current <= newest) return;
    const from = Math.max(newest + 1, current - this.subWindows + 1);
    for (let k = from; k <= current; k++) cells[at + COUNTS + this.ring(k)] = 0;
    cells[at + NEWEST] = current;
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const decision = this.answer(cells, at, nowMs, cost);
    if (decision.allowed && cost > 0) {
      const current = this.current(cells, at, nowMs);
      this.roll(cells, at, current);
      const i = at + COUNTS + this.ring(current);
      cells[i] = cells[i]! + cost;
    }
    return decision;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    return this.answer(cells, at, nowMs, cost);
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const current = this.current(cells, at, nowMs);
    this.roll(cells, at, current);
    let left = cost;
    // Give back from the newest sub-window first: the charge being refunded is most likely there.
    for (let k = current; k > current - this.subWindows && left > 0; k--) {
      const i = at + COUNTS + this.ring(k);
      const take = Math.min(cells[i]!, left);
      cells[i] = cells[i]! - take;
      left -= take;
    }
  }

  restAtMs(cells: Float64Array, at: number): number {
    const newest = cells[at + NEWEST]!;
    for (let k = newest; k > newest - this.subWindows; k--) {
      if (cells[at + COUNTS + this.ring(k)]! > 0) return (k + this.subWindows) * this.subWindowMs;
    }
    return -Infinity;
  }

  scaled(share: number): Algorithm {
    return new SubWindowCounter(this.limit * checkShare(share, 'share'), this.windowMs, this.subWindows);
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name);
  }
}
