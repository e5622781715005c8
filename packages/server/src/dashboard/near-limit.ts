/** The keys nearest their limit right now: a bounded table of the most used keys seen lately. */

/** NearKey is one key's standing at its latest decision. */
export interface NearKey {
  readonly key: string;
  /** The share of the limit in use at the latest decision, 0 to 1 (1: nothing remains). */
  readonly usedShare: number;
  readonly limit: number;
  readonly remaining: number;
  /** When that decision was made, in ms. */
  readonly atMs: number;
}

/** NearLimitOptions configures a {@link NearLimit}. */
export interface NearLimitOptions {
  /** How many keys are held at most, at least 1. */
  readonly capacity: number;
  /** A key whose latest decision is older than this is forgotten, in ms. */
  readonly staleMs: number;
  /** A key not yet held enters only at or above this share of its limit in use (default 0.5). */
  readonly minShare?: number;
}

interface Standing {
  usedShare: number;
  limit: number;
  remaining: number;
  atMs: number;
}

/**
 * NearLimit returns the keys whose latest decision left the least of their limit, among the keys
 * decided within the last `staleMs`. It holds at most `capacity` keys: a key enters when the table
 * has room, or when it uses a larger share than the held key using the least (a stale key counts
 * as using nothing). A key already held is updated by every decision, so its share may fall.
 *
 * Exactness: the table is exact when fewer than `capacity` keys reach `minShare` within `staleMs`;
 * beyond that, a key is left out only when, at its latest decision, `capacity` other keys used at
 * least its share (those keys may use less since, until they are decided again).
 * Memory: `capacity` entries of 4 numbers and a key. An insertion into a full table scans it once
 * (O(capacity)); an update of a held key is one map lookup.
 *
 * @example
 * const near = new NearLimit({ capacity: 32, staleMs: 10_000 });
 * near.observe('ip:192.0.2.1', { limit: 10, remaining: 1 }, clock.now());
 * near.top(5, clock.now()); // [{ key: 'ip:192.0.2.1', usedShare: 0.9, ... }]
 */
export class NearLimit {
  private readonly held = new Map<string, Standing>();
  private readonly minShare: number;

  constructor(private readonly options: NearLimitOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError(`NearLimit capacity must be a whole number of at least 1, got ${options.capacity}`);
    if (!(options.staleMs > 0)) throw new RangeError(`NearLimit staleMs must be above 0, got ${options.staleMs}`);
    this.minShare = options.minShare ?? 0.5;
  }

  /** size returns how many keys are held (stale ones included until they are replaced or read). */
  get size(): number {
    return this.held.size;
  }

  /** observe records `key`'s latest decision (`limit` above 0) made at `atMs`. */
  observe(key: string, decision: { readonly limit: number; readonly remaining: number }, atMs: number): void {
    if (!(decision.limit > 0)) return;
    const usedShare = Math.min(1, Math.max(0, 1 - decision.remaining / decision.limit));
    const standing = this.held.get(key);
    if (standing !== undefined) {
      standing.usedShare = usedShare;
      standing.limit = decision.limit;
      standing.remaining = decision.remaining;
      standing.atMs = atMs;
      return;
    }
    if (usedShare < this.minShare) return;
    if (this.held.size >= this.options.capacity && !this.evictBelow(usedShare, atMs)) return;
    this.held.set(key, { usedShare, limit: decision.limit, remaining: decision.remaining, atMs });
  }

  /** top returns up to `n` keys decided within `staleMs` of `nowMs`, the most used first (then the latest). */
  top(n: number, nowMs: number): NearKey[] {
    const out: NearKey[] = [];
    for (const [key, s] of this.held) {
      if (nowMs - s.atMs > this.options.staleMs) this.held.delete(key);
      else if (s.usedShare > 0)
        out.push({ key, usedShare: s.usedShare, limit: s.limit, remaining: s.remaining, atMs: s.atMs });
    }
    out.sort((a, b) => b.usedShare - a.usedShare || b.atMs - a.atMs);
    return out.slice(0, Math.max(0, n));
  }

  /** Removes the held key using the least (stale keys first) when it uses less than `share`; says whether one went. */
  private evictBelow(share: number, nowMs: number): boolean {
    let victim: string | undefined;
    let least = Infinity;
    for (const [key, s] of this.held) {
      const score = nowMs - s.atMs > this.options.staleMs ? -1 : s.usedShare;
      if (score < least) {
        least = score;
        victim = key;
      }
    }
    if (victim === undefined || least >= share) return false;
    this.held.delete(victim);
    return true;
  }
}
