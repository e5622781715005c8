/**
 * The overflow tier of the memory store: when a policy's exact table is full of keys that are not
 * at rest, new keys are decided by a count-min sketch of the policy's state instead of being
 * refused. The sketch can only over-count, so no key is admitted beyond its limit; an honest
 * newcomer is refused only when, in every row, its cell is shared with keys that spent enough.
 */
import { countSlack, TIME_EPSILON_MS, type Algorithm } from '../core/algorithm.js';
import { FIXED_WINDOW } from '../core/algorithms/fixed-window.js';
import { GCRA } from '../core/algorithms/gcra.js';
import { SLIDING_WINDOW_LOG } from '../core/algorithms/sliding-window-log.js';
import { SUB_WINDOW_COUNTER } from '../core/algorithms/sub-window-counter.js';
import { LEAKY_BUCKET, TOKEN_BUCKET } from '../core/algorithms/token-bucket.js';
import { WEIGHTED_WINDOW } from '../core/algorithms/weighted-window.js';
import { ceilMs, makeDecision, type Decision } from '../core/decision.js';

/** OVERFLOW_ROWS is the number of rows (independent hashes) of an {@link OverflowSketch}. */
export const OVERFLOW_ROWS = 4;

/**
 * SketchKind is how a policy's state reduces to one number per cell, soundly:
 * - `window`: the cost counted in the current window (fixed window), all cells cleared when the
 *   window turns, which every key of the policy does at the same instant;
 * - `tat`: the time the key's spending is all restored (token and leaky bucket, GCRA: their
 *   state is exactly that one time, their `restAtMs`), compared with `limit` units' worth;
 * - `sliding`: the costs counted in the current and the previous aligned window of `windowMs`
 *   (sliding window log, sliding window counter in both forms). Any span those policies count
 *   (the last `windowMs`; the previous and current aligned windows; the last n sub-windows) lies
 *   within those two windows, so their sum over-counts it. A key decided here gets at most
 *   `limit` per two windows: stricter than the policy, never looser.
 */
type SketchKind = 'window' | 'tat' | 'sliding';

const KINDS: ReadonlyMap<symbol, SketchKind> = new Map<symbol, SketchKind>([
  [FIXED_WINDOW, 'window'],
  [TOKEN_BUCKET, 'tat'],
  [LEAKY_BUCKET, 'tat'],
  [GCRA, 'tat'],
  [SLIDING_WINDOW_LOG, 'sliding'],
  [WEIGHTED_WINDOW, 'sliding'],
  [SUB_WINDOW_COUNTER, 'sliding'],
]);

/** OverflowSketchOptions sizes an {@link OverflowSketch}. */
export interface OverflowSketchOptions {
  /** Cells in each of the {@link OVERFLOW_ROWS} rows. */
  cellsPerRow: number;
  /** Seed of the row hashes (default random), so that clients cannot aim keys at a cell. */
  seed?: number;
}

/**
 * OverflowSketch is a count-min sketch of one policy's state over keys that the exact table
 * cannot hold: {@link OVERFLOW_ROWS} rows of `cellsPerRow` float64 cells (8 bytes each), each key
 * hashed to one cell per row. A key's estimate is the least spent of its cells, and an admitted
 * request raises each of them to at least the estimate plus its cost (conservative update).
 *
 * Why it never admits beyond a limit: every cell holds at least what each key hashed to it has
 * spent (induction over the updates: a key's new spend is its estimate plus the cost, and every
 * cell of the key is raised to that), so the least of them is an over-count, and a request is
 * admitted only when that over-count plus its cost fits the limit. Refunds are not applied to
 * the sketch (a refund could give back what another key spent): a key decided here stays
 * charged, which only over-counts.
 *
 * The bound: with `n` keys in the sketch not at rest, each with at most `s` units not yet
 * restored, a newcomer of cost `c` under limit `L` is refused wrongly only when each of its cells
 * carries more than `L - c` of others' spending; by Markov's inequality per row and independent
 * row hashes, with probability at most `(n * s / (cellsPerRow * (L - c))) ** 4`. At 10x
 * `cellsPerRow` keys in flight of one unit each and L >= 33, that is at most 1%.
 */
export class OverflowSketch {
  /** The cells: TATs (`tat`), or the counts of the current window (`window`, `sliding`). */
  private cells: Float64Array;
  /** The counts of the previous window (`sliding` only). */
  private previous: Float64Array | undefined;
  /** ms one unit of cost takes to restore (`tat`), or the window's length. */
  private readonly unitMs: number;
  /** The window the counts belong to (`window`, `sliding`). */
  private windowStartMs = -Infinity;
  /** Largest shortfall of the time check (`tat`), or of the count check, still admitted. */
  private readonly slack: number;
  private readonly hashSeed: number;
  /** The cell of each row for the key last hashed; reused, so a decision allocates nothing. */
  private readonly slots = new Int32Array(OVERFLOW_ROWS);
  /** The least current-window count among the key last hashed's cells (`sliding`). */
  private leastCurrent = 0;

  private constructor(
    private readonly algorithm: Algorithm,
    private readonly kind: SketchKind,
    private readonly cellsPerRow: number,
    seed: number,
  ) {
    const windowMs = algorithm.windowMs!;
    this.unitMs = kind === 'tat' ? windowMs / algorithm.limit : windowMs;
    this.slack =
      kind === 'tat'
        ? Math.min(TIME_EPSILON_MS, countSlack(algorithm.limit) * this.unitMs)
        : countSlack(algorithm.limit);
    this.cells = new Float64Array(OVERFLOW_ROWS * cellsPerRow).fill(kind === 'tat' ? -Infinity : 0);
    if (kind === 'sliding') this.previous = new Float64Array(OVERFLOW_ROWS * cellsPerRow);
    this.hashSeed = seed >>> 0;
  }

  /**
   * create returns a sketch for `algorithm`, or undefined for a policy it has no sound reduction
   * for (one without a {@link Algorithm.kind} floodgate knows, or without `windowMs`): such a
   * policy's new keys are refused as `store-full` when the exact table is full.
   */
  static create(algorithm: Algorithm, options: OverflowSketchOptions): OverflowSketch | undefined {
    const kind = algorithm.kind === undefined ? undefined : KINDS.get(algorithm.kind);
    const windowMs = algorithm.windowMs;
    if (kind === undefined || windowMs === undefined || !(windowMs > 0) || !Number.isFinite(windowMs)) return undefined;
    return new OverflowSketch(
      algorithm,
      kind,
      options.cellsPerRow,
      options.seed ?? Math.floor(Math.random() * 2 ** 32),
    );
  }

  /** bytes returns the memory the sketch's cells take: 32 bytes per cell of a row, 64 for the sliding windows. */
  get bytes(): number {
    return this.cells.byteLength + (this.previous?.byteLength ?? 0);
  }

  /** consume decides a request of `cost` on `key` at `nowMs` from the sketch, charging it when admitted. */
  consume(key: string, cost: number, nowMs: number): Decision {
    const estimate = this.estimate(key, nowMs);
    const decision = this.answer(estimate, nowMs, cost);
    if (decision.allowed && cost > 0) this.raise(this.raisedTo(estimate, nowMs, cost));
    return decision;
  }

  /** peek answers what {@link consume} would, charging nothing. */
  peek(key: string, cost: number, nowMs: number): Decision {
    return this.answer(this.estimate(key, nowMs), nowMs, cost);
  }

  /**
   * reserve books `cost` on `key` at `nowMs` for the buckets and GCRA (see {@link Algorithm.reserve}):
   * the ms to wait, counted from the key's estimate, or -1 when that exceeds `maxWaitMs` (nothing
   * charged). The request then proceeds when the exact policy would have admitted it at the
   * latest. -1 for the window policies, which do not book.
   */
  reserve(key: string, cost: number, nowMs: number, maxWaitMs: number): number {
    if (this.kind !== 'tat') return -1;
    const tat = Math.max(this.estimate(key, nowMs), nowMs);
    const waitMs = ceilMs(tat + cost * this.unitMs - this.algorithm.limit * this.unitMs - this.slack - nowMs);
    if (waitMs > maxWaitMs) return -1;
    if (cost > 0) this.raise(Math.max(tat, nowMs + waitMs) + cost * this.unitMs);
    return waitMs;
  }

  /**
   * seed writes the sketch's estimate for `key` into `cells` at `at`, a record just initialised
   * as of `nowMs`, so that a key moving into the exact table keeps at least what it spent here
   * (charged at `nowMs`, so it is restored no sooner than it would have been).
   */
  seed(key: string, cells: Float64Array, at: number, nowMs: number): void {
    const estimate = this.estimate(key, nowMs);
    const spent = this.kind === 'tat' ? (estimate - nowMs) / this.unitMs : estimate;
    if (spent > 0) this.algorithm.consume(cells, at, nowMs, Math.min(spent, this.algorithm.limit));
  }

  /** The key's estimate (and remembers its cells in `slots`), after turning the window if due. */
  private estimate(key: string, nowMs: number): number {
    if (this.kind !== 'tat') this.turnWindow(nowMs);
    // Two hashes in one pass over the key: FNV-1a from two seeds, each then through murmur3's finaliser.
    let a = (0x811c9dc5 ^ this.hashSeed) >>> 0;
    let b = (0x811c9dc5 ^ this.hashSeed ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193);
    }
    const h1 = mix(a);
    const h2 = mix(b) | 1;
    let least = Infinity;
    let leastCurrent = Infinity;
    for (let row = 0; row < OVERFLOW_ROWS; row++) {
      const slot = row * this.cellsPerRow + (((h1 + Math.imul(row, h2)) >>> 0) % this.cellsPerRow);
      this.slots[row] = slot;
      const current = this.cells[slot]!;
      leastCurrent = Math.min(leastCurrent, current);
      least = Math.min(least, this.previous === undefined ? current : current + this.previous[slot]!);
    }
    this.leastCurrent = leastCurrent;
    return least;
  }

  /** What an admitted request's cells must hold at least: the key's new TAT, or its new current count. */
  private raisedTo(estimate: number, nowMs: number, cost: number): number {
    if (this.kind === 'tat') return Math.max(estimate, nowMs) + cost * this.unitMs;
    return (this.kind === 'sliding' ? this.leastCurrent : estimate) + cost;
  }

  /** Raises each remembered cell to at least `value`. */
  private raise(value: number): void {
    for (let row = 0; row < OVERFLOW_ROWS; row++) {
      const slot = this.slots[row]!;
      if (this.cells[slot]! < value) this.cells[slot] = value;
    }
  }

  /** Moves the counts on when `nowMs` is in a later window; a clock gone back stays in the current one. */
  private turnWindow(nowMs: number): void {
    const startMs = Math.floor(nowMs / this.unitMs) * this.unitMs;
    if (startMs <= this.windowStartMs) return;
    const next = startMs === this.windowStartMs + this.unitMs;
    this.windowStartMs = startMs;
    if (this.previous === undefined) {
      this.cells.fill(0);
    } else if (next) {
      // The current window becomes the previous one; the old previous, cleared, the current.
      const old = this.previous.fill(0);
      this.previous = this.cells;
      this.cells = old;
    } else {
      this.previous.fill(0);
      this.cells.fill(0);
    }
  }

  private answer(estimate: number, nowMs: number, cost: number): Decision {
    const limit = this.algorithm.limit;
    if (this.kind === 'tat') {
      const toleranceMs = limit * this.unitMs;
      const tat = Math.max(estimate, nowMs);
      const allowed = cost === 0 || tat + cost * this.unitMs - nowMs <= toleranceMs + this.slack;
      const settled = allowed ? tat + cost * this.unitMs : tat;
      return makeDecision(
        allowed,
        limit,
        (toleranceMs - (settled - nowMs)) / this.unitMs,
        tat + cost * this.unitMs - toleranceMs - nowMs,
        settled - nowMs,
      );
    }
    const allowed = estimate + cost <= limit + this.slack;
    const after = allowed ? estimate + cost : estimate;
    const untilEndMs = this.windowStartMs + this.unitMs - nowMs;
    if (this.kind === 'window')
      return makeDecision(allowed, limit, limit - after, untilEndMs, after > 0 ? untilEndMs : 0);
    // Sliding: the previous window's counts leave at this window's end, the current one's a window later.
    const current = allowed ? this.leastCurrent + cost : this.leastCurrent;
    const retryMs = current + cost <= limit + this.slack ? untilEndMs : untilEndMs + this.unitMs;
    return makeDecision(
      allowed,
      limit,
      limit - after,
      retryMs,
      current > 0 ? untilEndMs + this.unitMs : after > 0 ? untilEndMs : 0,
    );
  }
}

/** murmur3's 32-bit finaliser: every input bit moves every output bit. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
