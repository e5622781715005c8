import { checkShare, type Algorithm } from '../algorithm.js';
import { makeDecision, type Decision } from '../decision.js';
import { FloodgateError } from '../errors.js';
import { checkCost, durationMs, positiveInteger, requireObject } from '../validate.js';

/** SlidingWindowLogOptions configures {@link slidingWindowLog}. */
export interface SlidingWindowLogOptions {
  /** Most cost admitted in any span of `windowMs`; a whole number up to {@link MAX_LOG_LIMIT}. */
  limit: number;
  /** Window length in whole milliseconds (at least 1). */
  windowMs: number;
}

/** MAX_LOG_LIMIT is the largest limit a sliding log accepts: its state holds one time per unit. */
export const MAX_LOG_LIMIT = 100_000;

// Cells: [0] ring index of the oldest entry, [1] entries held, [2 .. 2 + limit) entry times in ms,
// oldest first, never decreasing. One entry per unit of cost.
const HEAD = 0;
const COUNT = 1;
const RING = 2;

/** SLIDING_WINDOW_LOG is the {@link Algorithm.kind} of {@link slidingWindowLog}'s policies. */
export const SLIDING_WINDOW_LOG: unique symbol = Symbol('sliding-window-log');

class SlidingWindowLog implements Algorithm {
  readonly name = 'sliding-window-log';
  readonly kind = SLIDING_WINDOW_LOG;
  readonly width: number;
  readonly params: Readonly<Record<string, number>>;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    this.width = RING + limit;
    this.params = { limit, windowMs };
  }

  init(cells: Float64Array, at: number): void {
    cells[at + HEAD] = 0;
    cells[at + COUNT] = 0;
  }

  /** Time of the i-th held entry, oldest first. */
  private entry(cells: Float64Array, at: number, i: number): number {
    return cells[at + RING + ((cells[at + HEAD]! + i) % this.limit)]!;
  }

  /** How many of the oldest entries have left the window at nowMs (entries are sorted: binary search). */
  private expired(cells: Float64Array, at: number, nowMs: number): number {
    let lo = 0;
    let hi = cells[at + COUNT]!;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entry(cells, at, mid) + this.windowMs <= nowMs) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private answer(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const count = cells[at + COUNT]!;
    const dead = this.expired(cells, at, nowMs);
    const live = count - dead;
    const allowed = live + cost <= this.limit;
    const after = allowed ? live + cost : live;
    // Rejected: the (live + cost - limit)-th oldest live entry must leave first.
    const blocker = allowed ? 0 : this.entry(cells, at, dead + live + cost - this.limit - 1);
    const newest = count > 0 ? this.entry(cells, at, count - 1) : -Infinity;
    const newestAfter = allowed && cost > 0 ? Math.max(nowMs, newest) : newest;
    return makeDecision(
      allowed,
      this.limit,
      this.limit - after,
      blocker + this.windowMs - nowMs,
      after > 0 ? newestAfter + this.windowMs - nowMs : 0,
    );
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const decision = this.answer(cells, at, nowMs, cost);
    if (decision.allowed && cost > 0) this.append(cells, at, nowMs, cost);
    return decision;
  }

  private append(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const dead = this.expired(cells, at, nowMs);
    let count = cells[at + COUNT]! - dead;
    const head = (cells[at + HEAD]! + dead) % this.limit;
    const newest = count > 0 ? cells[at + RING + ((head + count - 1) % this.limit)]! : -Infinity;
    // An entry recorded while the clock is behind the newest takes the newest time: never earlier.
    const stampMs = Math.max(nowMs, newest);
    for (let i = 0; i < cost; i++) cells[at + RING + ((head + count++) % this.limit)] = stampMs;
    cells[at + HEAD] = head;
    cells[at + COUNT] = count;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    return this.answer(cells, at, nowMs, cost);
  }

  refund(cells: Float64Array, at: number, _nowMs: number, cost: number): void {
    cells[at + COUNT] = Math.max(0, cells[at + COUNT]! - Math.floor(cost));
  }

  restAtMs(cells: Float64Array, at: number): number {
    const count = cells[at + COUNT]!;
    return count > 0 ? this.entry(cells, at, count - 1) + this.windowMs : -Infinity;
  }

  /** scaled keeps a whole-number limit (one logged time per unit), rounded down, at least 1. */
  scaled(share: number): Algorithm {
    return new SlidingWindowLog(Math.max(1, Math.floor(this.limit * checkShare(share, 'share'))), this.windowMs);
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name, true);
  }
}

/**
 * slidingWindowLog returns the sliding window log {@link Algorithm}: it remembers the time of every
 * admitted unit of cost, and admits a request while the units of the last `windowMs` plus its cost
 * stay within `limit`. It is exact: no span of `windowMs` ever holds more than `limit`. Its state
 * costs 8 bytes per unit of `limit` per key; for large limits prefer {@link slidingWindowCounter}.
 * Costs must be whole numbers.
 *
 * Time faults: an entry is never logged at a time before the newest one, and a clock behind only
 * keeps entries in the window longer, so a clock stepping back in one process admits nothing extra.
 * Nodes whose clocks are up to `skewSpreadMs` apart admit at most `limit` in any real span of
 * `windowMs - skewSpreadMs` (the fastest clock sees entries leave that much early): in a span of
 * `windowMs`, at most what was admitted in `skewSpreadMs` more, `limit * skewSpreadMs / windowMs`
 * when admissions are spread evenly. See docs/time.md.
 *
 * @throws FloodgateError `INVALID_OPTION` for a limit that is not a whole number from 1 to
 * {@link MAX_LOG_LIMIT}, or a windowMs that is not a whole number of at least 1.
 * @example
 * const limiter = new Limiter({ policy: slidingWindowLog({ limit: 5, windowMs: 1_000 }) });
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): Algorithm {
  const o = requireObject<SlidingWindowLogOptions>(options, 'slidingWindowLog');
  const limit = positiveInteger(o.limit, 'slidingWindowLog.limit');
  if (limit > MAX_LOG_LIMIT) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `slidingWindowLog.limit must be at most ${MAX_LOG_LIMIT} (the log keeps one time per unit); use slidingWindowCounter for larger limits, got ${limit}`,
      'slidingWindowLog.limit',
    );
  }
  return new SlidingWindowLog(limit, durationMs(o.windowMs, 'slidingWindowLog.windowMs'));
}
