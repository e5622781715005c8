/**
 * DeadlineHeap holds waiters' deadlines (time, waiter sequence number) as a binary min-heap in two
 * typed arrays: 16 bytes a waiter, no object each. Entries of waiters that left early stay until
 * they surface or {@link compact} drops them; the owner checks that a popped waiter still waits.
 */
export class DeadlineHeap {
  private times = new Float64Array(8);
  private seqs = new Float64Array(8);
  private count = 0;

  /** size returns how many entries the heap holds, stale ones included. */
  get size(): number {
    return this.count;
  }

  /** minTimeMs returns the earliest deadline held, or Infinity when empty. */
  minTimeMs(): number {
    return this.count > 0 ? this.times[0]! : Infinity;
  }

  /** minSeq returns the waiter of the earliest deadline, or -1 when empty. */
  minSeq(): number {
    return this.count > 0 ? this.seqs[0]! : -1;
  }

  /** push adds waiter `seq` with deadline `timeMs`. */
  push(timeMs: number, seq: number): void {
    if (this.count === this.times.length) this.resize(this.count * 2);
    this.siftUp(this.count++, timeMs, seq);
  }

  /** pop removes the earliest deadline and returns its waiter's sequence number (-1 when empty). */
  pop(): number {
    if (this.count === 0) return -1;
    const seq = this.seqs[0]!;
    const last = --this.count;
    if (last > 0) this.siftDown(0, this.times[last]!, this.seqs[last]!);
    return seq;
  }

  /** compact keeps only the entries of waiters for which `waits` is true. */
  compact(waits: (seq: number) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.count; i++) {
      if (!waits(this.seqs[i]!)) continue;
      this.times[kept] = this.times[i]!;
      this.seqs[kept] = this.seqs[i]!;
      kept++;
    }
    this.count = kept;
    // Floyd's heap construction: sift every parent down, last first.
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.siftDown(i, this.times[i]!, this.seqs[i]!);
    if (this.times.length > 64 && kept < this.times.length / 4) this.resize(Math.max(8, kept * 2));
  }

  private siftUp(index: number, timeMs: number, seq: number): void {
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (this.times[parent]! <= timeMs) break;
      this.times[index] = this.times[parent]!;
      this.seqs[index] = this.seqs[parent]!;
      index = parent;
    }
    this.times[index] = timeMs;
    this.seqs[index] = seq;
  }

  private siftDown(index: number, timeMs: number, seq: number): void {
    for (;;) {
      let child = 2 * index + 1;
      if (child >= this.count) break;
      if (child + 1 < this.count && this.times[child + 1]! < this.times[child]!) child++;
      if (this.times[child]! >= timeMs) break;
      this.times[index] = this.times[child]!;
      this.seqs[index] = this.seqs[child]!;
      index = child;
    }
    this.times[index] = timeMs;
    this.seqs[index] = seq;
  }

  private resize(capacity: number): void {
    const times = new Float64Array(capacity);
    const seqs = new Float64Array(capacity);
    times.set(this.times.subarray(0, this.count));
    seqs.set(this.seqs.subarray(0, this.count));
    this.times = times;
    this.seqs = seqs;
  }
}
