/** The recent refusals: a fixed ring of why the latest refused requests were refused. */

/** Refusal is one refused request, as one rule refused it. */
export interface Refusal {
  readonly route: string;
  readonly rule: string;
  /** The key it counted against (the identity part, as the rule keys it, e.g. `ip:192.0.2.1`). */
  readonly key: string;
  readonly limit: number;
  readonly remaining: number;
  /** When the same request would have passed, in ms (0 when unknown). */
  readonly retryAfterMs: number;
  /** Why: the decision's reason (`limit`, `fail-closed`, ...) or the queue's error (`QUEUE_FULL`, `WAIT_TIMEOUT`). */
  readonly reason: string;
  /** When it was refused, in ms since the epoch. */
  readonly atMs: number;
}

/**
 * RefusalRing returns the latest `capacity` refusals recorded, newest first; older ones are
 * overwritten in place. Memory: `capacity` references (the entries themselves, about 100 bytes
 * plus the key each). Recording is O(1) and never allocates beyond the entry it is given.
 *
 * @example
 * const ring = new RefusalRing(100);
 * ring.record({ route: 'api', rule: 'per-ip', key: 'ip:192.0.2.1', limit: 10, remaining: 0, retryAfterMs: 800, reason: 'limit', atMs: Date.now() });
 * ring.latest(20);
 */
export class RefusalRing {
  private readonly entries: (Refusal | undefined)[];
  private next = 0;
  /** total counts every refusal recorded, including those overwritten. */
  total = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`RefusalRing capacity must be a whole number of at least 1, got ${capacity}`);
    this.entries = new Array<Refusal | undefined>(capacity).fill(undefined);
  }

  /** record keeps `refusal`, overwriting the oldest when the ring is full. */
  record(refusal: Refusal): void {
    this.entries[this.next] = refusal;
    this.next = (this.next + 1) % this.capacity;
    this.total++;
  }

  /** latest returns up to `n` refusals, newest first. */
  latest(n: number): Refusal[] {
    const out: Refusal[] = [];
    const count = Math.min(n, this.capacity, this.total);
    for (let i = 1; i <= count; i++) out.push(this.entries[(this.next - i + this.capacity) % this.capacity]!);
    return out;
  }
}
