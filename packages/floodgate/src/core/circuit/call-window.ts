/** A sliding window of call counts, kept as a ring of buckets: the statistics of a circuit breaker. */

/**
 * CallWindow counts calls, and the failures among them, over the last `windowMs`. It keeps a ring
 * of `buckets` buckets of `windowMs / buckets` ms each (Sentinel's `LeapArray`), so its memory is
 * the same at one call a minute or a million a second, and every method is O(1) amortised.
 *
 * A call counts from the moment it is added until its bucket leaves the ring: with `windowMs`
 * 1000 and 10 buckets, a call at 1234 ms (bucket 1200-1299) counts up to 2199 ms and is forgotten
 * at 2200 ms. So the window reaches back between `windowMs - windowMs / buckets` and `windowMs`.
 *
 * Time is an argument, never read. A time before the newest one seen (a clock going backwards)
 * counts in the newest bucket: nothing forgotten comes back, nothing is forgotten early.
 */
export class CallWindow {
  private readonly bucketMs: number;
  private readonly bucketCalls: number[];
  private readonly bucketFailures: number[];
  /** The index (`floor(ms / bucketMs)`) of the newest bucket written; the ring holds indexes newest - buckets + 1 to newest. */
  private newest = Number.NEGATIVE_INFINITY;
  private totalCalls = 0;
  private totalFailures = 0;

  /** Creates an empty window of `windowMs` in `buckets` buckets; `windowMs / buckets` must be a whole number (the caller checks). */
  constructor(
    windowMs: number,
    private readonly buckets: number,
  ) {
    this.bucketMs = windowMs / buckets;
    this.bucketCalls = new Array<number>(buckets).fill(0);
    this.bucketFailures = new Array<number>(buckets).fill(0);
  }

  /** calls returns how many calls the window held after the last {@link add} (or 0 after {@link clear}). */
  get calls(): number {
    return this.totalCalls;
  }

  /** failures returns how many of {@link calls} were failures. */
  get failures(): number {
    return this.totalFailures;
  }

  /** add counts one call at `nowMs`, a failure when `failed`, after forgetting the calls older than the window. */
  add(nowMs: number, failed: boolean): void {
    const slot = this.slide(Math.floor(nowMs / this.bucketMs));
    this.bucketCalls[slot]!++;
    this.totalCalls++;
    if (!failed) return;
    this.bucketFailures[slot]!++;
    this.totalFailures++;
  }

  /** clear forgets every call. */
  clear(): void {
    this.bucketCalls.fill(0);
    this.bucketFailures.fill(0);
    this.totalCalls = 0;
    this.totalFailures = 0;
    this.newest = Number.NEGATIVE_INFINITY;
  }

  /** Moves the ring forward to bucket `index` (never back), emptying the buckets that fall out; returns the slot to count in. */
  private slide(index: number): number {
    if (index <= this.newest) return this.slotOf(this.newest);
    if (index - this.newest >= this.buckets) {
      this.clear();
    } else {
      for (let i = this.newest + 1; i <= index; i++) this.empty(this.slotOf(i));
    }
    this.newest = index;
    return this.slotOf(index);
  }

  private empty(slot: number): void {
    this.totalCalls -= this.bucketCalls[slot]!;
    this.totalFailures -= this.bucketFailures[slot]!;
    this.bucketCalls[slot] = 0;
    this.bucketFailures[slot] = 0;
  }

  /** The ring slot of bucket `index`; indexes below 0 (times before the epoch) wrap too. */
  private slotOf(index: number): number {
    return ((index % this.buckets) + this.buckets) % this.buckets;
  }
}
