import { checkShare, countSlack, type Algorithm } from '../algorithm.js';
import { makeDecision, type Decision } from '../decision.js';
import { checkCost, durationMs, positiveNumber, requireObject } from '../validate.js';

/** FixedWindowOptions configures {@link fixedWindow}. */
export interface FixedWindowOptions {
  /** Most cost admitted in one window. */
  limit: number;
  /** Window length in whole milliseconds (at least 1); windows start at multiples of it since the epoch. */
  windowMs: number;
}

// Cells: [0] start of the window the count belongs to (-Infinity: none yet), [1] cost counted in it.
const START = 0;
const COUNT = 1;

/** FIXED_WINDOW is the {@link Algorithm.kind} of {@link fixedWindow}'s policies. */
export const FIXED_WINDOW: unique symbol = Symbol('fixed-window');

class FixedWindow implements Algorithm {
  readonly name = 'fixed-window';
  readonly kind = FIXED_WINDOW;
  readonly width = 2;
  readonly params: Readonly<Record<string, number>>;

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
    cells[at + COUNT] = 0;
  }

  /** Start of the window that `nowMs` counts in; a clock gone back stays in the recorded window. */
  private windowAt(cells: Float64Array, at: number, nowMs: number): number {
    return Math.max(Math.floor(nowMs / this.windowMs) * this.windowMs, cells[at + START]!);
  }

  private countIn(cells: Float64Array, at: number, startMs: number): number {
    return startMs === cells[at + START] ? cells[at + COUNT]! : 0;
  }

  private answer(count: number, startMs: number, nowMs: number, cost: number): Decision {
    const allowed = count + cost <= this.limit + this.slack;
    const after = allowed ? count + cost : count;
    const untilEndMs = startMs + this.windowMs - nowMs;
    return makeDecision(allowed, this.limit, this.limit - after, untilEndMs, after > 0 ? untilEndMs : 0);
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const startMs = this.windowAt(cells, at, nowMs);
    const count = this.countIn(cells, at, startMs);
    const decision = this.answer(count, startMs, nowMs, cost);
    if (decision.allowed) {
      cells[at + START] = startMs;
      cells[at + COUNT] = count + cost;
    }
    return decision;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const startMs = this.windowAt(cells, at, nowMs);
    return this.answer(this.countIn(cells, at, startMs), startMs, nowMs, cost);
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const startMs = this.windowAt(cells, at, nowMs);
    if (startMs !== cells[at + START]) return; // the charge's window has ended: nothing to give back
    cells[at + COUNT] = Math.max(0, cells[at + COUNT]! - cost);
  }

  restAtMs(cells: Float64Array, at: number): number {
    return cells[at + COUNT]! > 0 ? cells[at + START]! + this.windowMs : -Infinity;
  }

  scaled(share: number): Algorithm {
    return new FixedWindow(this.limit * checkShare(share, 'share'), this.windowMs);
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name);
  }
}

/**
 * fixedWindow returns the fixed window counter {@link Algorithm}: time is cut into windows of
 * `windowMs` aligned to the epoch, and each window admits up to `limit` cost. It is the cheapest
 * policy, but a client can spend `limit` at the end of one window and `limit` again at the start
 * of the next: up to twice the limit within a short span across the boundary. The sliding
 * policies do not have that burst.
 *
 * Time faults: a clock that goes back into an earlier window keeps counting in the recorded
 * window, whose start is never moved back, so a clock stepping back in one process admits nothing
 * extra. Nodes whose clocks are up to `skewSpreadMs` apart still admit at most `limit` per window;
 * a window starts when the fastest clock reaches it, so on the real timeline its bounds move by up
 * to `skewSpreadMs`: at most `limit` in `[k windowMs - minOffset, (k + 1) windowMs - maxOffset)`,
 * and at most twice the limit in any span of `windowMs - skewSpreadMs`. See docs/time.md.
 *
 * @throws FloodgateError `INVALID_OPTION` for a limit that is not a finite number above 0, or a
 * windowMs that is not a whole number of at least 1.
 * @example
 * const limiter = new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }) });
 */
export function fixedWindow(options: FixedWindowOptions): Algorithm {
  const o = requireObject<FixedWindowOptions>(options, 'fixedWindow');
  const limit = positiveNumber(o.limit, 'fixedWindow.limit');
  const windowMs = durationMs(o.windowMs, 'fixedWindow.windowMs');
  return new FixedWindow(limit, windowMs);
}
