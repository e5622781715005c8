/**
 * RANK orders events that fall at the same time: a change of capacity first, then the service's
 * answers, then the clients' timeouts (an answer at the very deadline is in time), then retries.
 * New arrivals come after all of these.
 */
export const RANK = { capacity: 0, answer: 1, timeout: 2, retry: 3 } as const;

/** EventRank is one of the {@link RANK} values. */
export type EventRank = (typeof RANK)[keyof typeof RANK];

interface Entry {
  readonly atMs: number;
  readonly rank: EventRank;
  readonly seq: number;
  readonly run: (atMs: number) => void;
}

/**
 * EventQueue is the timeline of a discrete-event run: a binary min-heap of callbacks by time,
 * then rank, then the order they were pushed, so the same pushes always run in the same order.
 */
export class EventQueue {
  private readonly heap: Entry[] = [];
  private seq = 0;

  /** size returns how many events are waiting. */
  get size(): number {
    return this.heap.length;
  }

  /** nextAtMs returns the time of the next event, Infinity when none waits. */
  nextAtMs(): number {
    return this.heap[0]?.atMs ?? Infinity;
  }

  /** push schedules `run` at `atMs`; it is called with that time. */
  push(atMs: number, rank: EventRank, run: (atMs: number) => void): void {
    const h = this.heap;
    h.push({ atMs, rank, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (before(h[parent]!, h[i]!)) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
  }

  /** runNext takes the next event off the queue, runs it and returns its time (Infinity when none waits). */
  runNext(): number {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return Infinity;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      this.siftDown();
    }
    top.run(top.atMs);
    return top.atMs;
  }

  private siftDown(): void {
    const h = this.heap;
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      let least = i;
      if (left < h.length && before(h[left]!, h[least]!)) least = left;
      if (left + 1 < h.length && before(h[left + 1]!, h[least]!)) least = left + 1;
      if (least === i) return;
      [h[least], h[i]] = [h[i]!, h[least]!];
      i = least;
    }
  }
}

function before(a: Entry, b: Entry): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && (a.rank < b.rank || (a.rank === b.rank && a.seq < b.seq)));
}
