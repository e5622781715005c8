/**
 * A bounded heavy-hitters sketch: space-saving (Metwally, Agrawal and El Abbadi, 2005) over a
 * stream of weighted, exponentially decayed events, for "which keys were refused most, lately".
 */

/** HeavyHitter is one monitored key with its estimated decayed count and that estimate's error bound. */
export interface HeavyHitter {
  readonly key: string;
  /** The estimated count, decayed to the time asked for: never below the true decayed count. */
  readonly count: number;
  /** How much `count` may exceed the true decayed count: `count - error` is a lower bound. */
  readonly error: number;
}

/** SpaceSavingOptions configures a {@link SpaceSaving}. */
export interface SpaceSavingOptions {
  /** How many keys are monitored at once (the memory bound), at least 1. */
  readonly capacity: number;
  /** How long an event takes to count for half as much, in ms; `Infinity` for no decay. */
  readonly halfLifeMs: number;
}

/** Forward decay rescales every stored weight once they grow past this, keeping them finite. */
const RESCALE_ABOVE = 1e200;

/**
 * SpaceSaving returns, for a stream of `(key, weight, timeMs)` events, the keys with the largest
 * decayed weight, holding at most `capacity` keys whatever the number of distinct keys seen.
 *
 * An event of weight w at time t counts `w * 2^-((now - t) / halfLifeMs)` at time `now`. The
 * decay is forward (weights are scaled up by `2^((t - landmark) / halfLifeMs)` when they arrive
 * and the whole table is divided back at read time), so one global factor decays every counter
 * at once and the counters' order never changes by decay alone.
 *
 * Error bound (space-saving's, which holds for weighted streams): for every monitored key,
 * `true <= count <= true + error`, and `error <= min`, the smallest monitored count. So a count
 * is overestimated by at most the smallest counter, which is at most `total / capacity` (the
 * decayed weight of the whole stream over the capacity). Every key whose true decayed count is
 * above `min` is monitored. An unmonitored key's true count is at most `min`.
 *
 * Ties (equal counts, common among keys refused once or twice) are broken by a hash of the key
 * under a fixed seed ({@link tieRank}), never by arrival order or a per-process seed: the top list
 * and the key a full table evicts depend on the counts alone, so two processes fed the same events
 * agree on them, and a client cannot win a tie by the name it picks.
 *
 * Memory: `capacity` entries (a key reference, two doubles and two numbers each, a heap slot and a
 * map entry), about 130 bytes plus the key's characters per entry. Updates cost O(log capacity).
 * Time going backwards is taken as no time passing (an event is never weighted above one at `now`).
 *
 * @example
 * const refused = new SpaceSaving({ capacity: 64, halfLifeMs: 10_000 });
 * refused.add('ip:192.0.2.1', 1, clock.now());
 * refused.top(10, clock.now()); // [{ key: 'ip:192.0.2.1', count: 1, error: 0 }]
 */
export class SpaceSaving {
  readonly capacity: number;
  readonly halfLifeMs: number;
  /** The heap of entries, smallest scaled count first; each entry knows its index, so a swap touches no map. */
  private readonly heap: Entry[] = [];
  private readonly entries = new Map<string, Entry>();
  private landmarkMs: number | undefined;
  private latestMs = -Infinity;

  constructor(options: SpaceSavingOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError(`SpaceSaving capacity must be a whole number of at least 1, got ${options.capacity}`);
    if (!(options.halfLifeMs > 0))
      throw new RangeError(`SpaceSaving halfLifeMs must be above 0 (Infinity for no decay), got ${options.halfLifeMs}`);
    this.capacity = options.capacity;
    this.halfLifeMs = options.halfLifeMs;
  }

  /** size returns how many keys are monitored now (at most `capacity`). */
  get size(): number {
    return this.heap.length;
  }

  /** add counts `weight` (>= 0) for `key` at `timeMs`. */
  add(key: string, weight: number, timeMs: number): void {
    if (!(weight > 0)) return;
    const scaled = weight * this.scaleAt(timeMs);
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      entry.count += scaled;
      this.siftDown(entry.index);
    } else if (this.heap.length < this.capacity) {
      const added: Entry = { key, count: scaled, error: 0, index: this.heap.length, tie: tieRank(key) };
      this.heap.push(added);
      this.entries.set(key, added);
      this.siftUp(added.index);
    } else {
      // Space-saving's step: the new key takes the smallest counter's place and inherits its count as error.
      const least = this.heap[0]!;
      this.entries.delete(least.key);
      least.key = key;
      least.tie = tieRank(key);
      least.error = least.count;
      least.count += scaled;
      this.entries.set(key, least);
      this.siftDown(0);
    }
  }

  /** top returns up to `n` monitored keys, largest count first, with counts decayed to `nowMs`. */
  top(n: number, nowMs: number): HeavyHitter[] {
    const divisor = this.scaleAt(Math.max(nowMs, this.latestMs), false);
    const order = [...this.heap].sort((a, b) => b.count - a.count || a.tie - b.tie || (a.key < b.key ? -1 : 1));
    return order
      .slice(0, Math.max(0, n))
      .map((e) => ({ key: e.key, count: e.count / divisor, error: e.error / divisor }));
  }

  /** minCount returns the smallest monitored count decayed to `nowMs` (0 until the table is full): the error bound. */
  minCount(nowMs: number): number {
    if (this.heap.length < this.capacity) return 0;
    return this.heap[0]!.count / this.scaleAt(Math.max(nowMs, this.latestMs), false);
  }

  /** The forward-decay factor at `timeMs`; moving the landmark rescales the table when it grows too large. */
  private scaleAt(timeMs: number, advance = true): number {
    if (this.halfLifeMs === Infinity) return 1;
    this.landmarkMs ??= timeMs;
    const t = Math.max(timeMs, this.latestMs);
    if (advance) this.latestMs = t;
    let factor = 2 ** ((t - this.landmarkMs) / this.halfLifeMs);
    if (factor > RESCALE_ABOVE && advance) {
      // Dividing every counter by one factor keeps their order, so the heap stays valid.
      for (const e of this.heap) {
        e.count /= factor;
        e.error /= factor;
      }
      this.landmarkMs = t;
      factor = 1;
    }
    return factor;
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!below(heap[i]!, heap[parent]!)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && below(heap[l]!, heap[least]!)) least = l;
      if (r < n && below(heap[r]!, heap[least]!)) least = r;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }

  private swap(a: number, b: number): void {
    const ea = this.heap[a]!;
    const eb = this.heap[b]!;
    this.heap[a] = eb;
    this.heap[b] = ea;
    eb.index = a;
    ea.index = b;
  }
}

/** One monitored key: its scaled count, the error it inherited, its place in the heap and its tie rank. */
interface Entry {
  key: string;
  count: number;
  error: number;
  index: number;
  tie: number;
}

/** Whether `a` is nearer eviction than `b`: a smaller count, or an equal one and a larger tie rank. */
function below(a: Entry, b: Entry): boolean {
  return a.count < b.count || (a.count === b.count && a.tie > b.tie);
}

/** The fixed seed of {@link tieRank}: FNV-1a's offset basis. */
const TIE_SEED = 0x811c9dc5;

/**
 * tieRank returns a key's rank among keys of equal count (lower ranks first): its 32-bit FNV-1a
 * hash (UTF-16 code units) under a fixed seed, the same in every process and every run.
 */
export function tieRank(key: string): number {
  let h = TIE_SEED;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
