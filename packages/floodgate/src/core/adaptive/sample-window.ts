/**
 * SampleWindow holds one sample window of an adaptive limit: the latencies of the calls answered
 * in it (at most `capacity`, in a preallocated array), its drops, and whether the limit was used.
 */
export class SampleWindow {
  private readonly values: Float64Array;
  private count = 0;
  /** Calls in the window that showed overload. */
  drops = 0;
  /** Whether some call found every slot taken, or took the last one, in the window. */
  saturated = false;

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
    if (this.count < this.values.length) this.values[this.count++] = rttMs;
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
    this.drops = 0;
    this.saturated = false;
  }
}
