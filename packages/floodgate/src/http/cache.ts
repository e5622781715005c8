/**
 * A small bounded memo for the request path: the same few clients send most requests, so what is
 * derived from their addresses and identities (canonical text, store keys) is worked out once.
 */

/**
 * BoundedCache maps strings to values, holding at most `capacity` entries and no key longer than
 * `maxKeyLength`. When full it starts over (cleared at once, no per-entry bookkeeping), so a
 * flood of distinct keys costs one `Map` insertion each and never more memory than the bound.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, V>();

  constructor(
    /** The most entries held. */
    readonly capacity: number,
    /** Longer keys are never stored, so that odd input cannot pin much memory. */
    readonly maxKeyLength = 256,
  ) {}

  /** size is the number of entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** get returns the value remembered for `key`, or undefined. */
  get(key: string): V | undefined {
    return this.entries.get(key);
  }

  /** set remembers `value` for `key`, unless the key is too long; a full cache starts over first. */
  set(key: string, value: V): void {
    if (key.length > this.maxKeyLength) return;
    if (this.entries.size >= this.capacity) this.entries.clear();
    this.entries.set(key, value);
  }
}
