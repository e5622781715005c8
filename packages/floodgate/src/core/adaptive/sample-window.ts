/**
 * SampleWindow holds one sample window of an adaptive limit: the latencies of the calls answered
 * in it (at most `capacity`, in a preallocated array), its drops, and whether the limit was used.
 */
export class SampleWindow {
  private readonly values: Float64Array;
  private count = 0;
  private sumMs = 0;
  private sumSquaresMs2 = 0;
  /** Calls in the window that showed overload. */
  drops = 0;
  /** Whether some call found every slot taken, or took the last one, in the window. */
  saturated = false;
  /** Calls seen in the window: ended, shed or queued. */
  private arrivals = 0;
  /** Of those, the calls that found the limit reached: shed, queued, or given the last slot. */
  private bound = 0;

  /** Creates an empty window that holds up to `capacity` latencies. */
  constructor(capacity: number) {
    this.values = new Float64Array(capacity);
  }

  /** size returns how many latencies the window holds. */
  get size(): number {
    return this.count;
  }

  /** full is true once the window holds `capacity` latencies: it must close. */
  get full(): boolean {
    return this.count === this.values.length;
  }

  /** add keeps one latency, in ms; past `capacity` it is dropped (the window should have closed). */
  add(rttMs: number): void {
    if (this.count === this.values.length) return;
    this.values[this.count++] = rttMs;
    this.sumMs += rttMs;
    this.sumSquaresMs2 += rttMs * rttMs;
  }

  /** arrived counts a call seen in the window; `bound` when it found the limit reached (then the window is saturated). */
  arrived(bound: boolean): void {
    this.arrivals++;
    if (!bound) return;
    this.bound++;
    this.saturated = true;
  }

  /** boundShare returns the share of the window's calls that found the limit reached; 0 for none. */
  get boundShare(): number {
    return this.arrivals === 0 ? 0 : this.bound / this.arrivals;
  }

  /**
   * relativeError returns the standard error of the window's mean latency over that mean: its
   * coefficient of variation over √n; 0 for fewer than two latencies or a mean of 0.
   */
  relativeError(): number {
    const n = this.count;
    if (n < 2 || this.sumMs <= 0) return 0;
    const mean = this.sumMs / n;
    const variance = Math.max(0, (this.sumSquaresMs2 - this.sumMs * mean) / (n - 1));
    return Math.sqrt(variance / n) / mean;
  }

  /** median returns the middle latency (the mean of the two middle ones for an even count); NaN when empty. It reorders the window. */
  median(): number {
    const n = this.count;
    if (n === 0) return NaN;
    const sorted = this.values.subarray(0, n).sort();
    return n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  }

  /** clear empties the window for the next one. */
  clear(): void {
    this.count = 0;
    this.sumMs = 0;
    this.sumSquaresMs2 = 0;
    this.drops = 0;
    this.saturated = false;
    this.arrivals = 0;
    this.bound = 0;
  }
}
