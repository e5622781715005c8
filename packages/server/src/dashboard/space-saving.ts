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
 * Memory: `capacity` entries (a key reference, two doubles, a heap slot and a map entry each),
 * about 100 bytes plus the key's characters per entry. Updates cost O(log capacity).
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
  /** The heap of keys, smallest scaled count first. */
  private readonly keys: string[] = [];
  private readonly counts: number[] = [];
  private readonly errors: number[] = [];
  /** Each monitored key's index in the heap. */
  private readonly slots = new Map<string, number>();
  private landmarkMs: number | undefined;
  private latestMs = -Infinity;

  constructor(options: SpaceSavingOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) throw new RangeError(`SpaceSaving capacity must be a whole number of at least 1, got ${options.capacity}`);
    if (!(options.halfLifeMs > 0)) throw new RangeError(`SpaceSaving halfLifeMs must be above 0 (Infinity for no decay), got ${options.halfLifeMs}`);
    this.capacity = options.capacity;
    this.halfLifeMs = options.halfLifeMs;
  }

  /** size returns how many keys are monitored now (at most `capacity`). */
  get size(): number {
    return this.keys.length;
  }

  /** add counts `weight` (>= 0) for `key` at `timeMs`. */
  add(key: string, weight: number, timeMs: number): void {
    if (!(weight > 0)) return;
    const scaled = weight * this.scaleAt(timeMs);
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      this.counts[slot]! += scaled;
      this.siftDown(slot);
    } else if (this.keys.length < this.capacity) {
      this.keys.push(key);
      this.counts.push(scaled);
      this.errors.push(0);
      this.slots.set(key, this.keys.length - 1);
      this.siftUp(this.keys.length - 1);
    } else {
      // Space-saving's step: the new key takes the smallest counter's place and inherits its count as error.
      const min = this.counts[0]!;
      this.slots.delete(this.keys[0]!);
      this.keys[0] = key;
      this.counts[0] = min + scaled;
      this.errors[0] = min;
      this.slots.set(key, 0);
      this.siftDown(0);
    }
  }

  /** top returns up to `n` monitored keys, largest count first, with counts decayed to `nowMs`. */
  top(n: number, nowMs: number): HeavyHitter[] {
    const divisor = this.scaleAt(Math.max(nowMs, this.latestMs), false);
    const order = this.keys.map((_, i) => i).sort((a, b) => this.counts[b]! - this.counts[a]!);
    return order.slice(0, Math.max(0, n)).map((i) => ({ key: this.keys[i]!, count: this.counts[i]! / divisor, error: this.errors[i]! / divisor }));
  }

  /** minCount returns the smallest monitored count decayed to `nowMs` (0 until the table is full): the error bound. */
  minCount(nowMs: number): number {
    if (this.keys.length < this.capacity) return 0;
    return this.counts[0]! / this.scaleAt(Math.max(nowMs, this.latestMs), false);
  }

  /** The forward-decay factor at `timeMs`; moving the landmark rescales the table when it grows too large. */
  private scaleAt(timeMs: number, advance = true): number {
    if (this.halfLifeMs === Infinity) return 1;
    this.landmarkMs ??= timeMs;
    const t = Math.max(timeMs, this.latestMs);
    if (advance) this.latestMs = t;
    let factor = 2 ** ((t - this.landmarkMs) / this.halfLifeMs);
    if (factor > RESCALE_ABOVE && advance) {
      for (let i = 0; i < this.counts.length; i++) {
        this.counts[i]! /= factor;
        this.errors[i]! /= factor;
      }
      this.landmarkMs = t;
      factor = 1;
    }
    return factor;
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.counts[parent]! <= this.counts[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && this.counts[l]! < this.counts[least]!) least = l;
      if (r < n && this.counts[r]! < this.counts[least]!) least = r;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }

  private swap(a: number, b: number): void {
    const k = this.keys[a]!;
    const c = this.counts[a]!;
    const e = this.errors[a]!;
    this.keys[a] = this.keys[b]!;
    this.counts[a] = this.counts[b]!;
    this.errors[a] = this.errors[b]!;
    this.keys[b] = k;
    this.counts[b] = c;
    this.errors[b] = e;
    this.slots.set(this.keys[a], a);
    this.slots.set(k, b);
  }
}
