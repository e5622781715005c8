/** Capacity a ring starts with, and goes back to when it empties after growing past it. */
const INITIAL_CAPACITY = 4;
const SHRINK_ABOVE = 64;

/**
 * WaiterRing is a first-in, first-out queue of waiters in parallel arrays, so that a waiter costs
 * 16 to 24 bytes here (a payload reference, a time, and a cost only once some cost is not 1),
 * not an object each.
 *
 * Each waiter gets a sequence number, counting up from 0 in arrival order, by which it is found
 * again (to cancel it); numbers are never reused. A waiter that leaves from behind the head
 * leaves a hole (its payload becomes undefined) until everything before it has left.
 *
 * `timeMs` is the owner's to interpret (a due time, or a deadline).
 */
export class WaiterRing<P> {
  private payloads: (P | undefined)[];
  private times: Float64Array;
  /** Costs, once some cost is not 1; undefined while every cost so far was 1. */
  private costs: Float64Array | undefined = undefined;
  private mask: number;
  private headIndex = 0;
  private startSeq = 0;
  private nextSeq = 0;
  private liveCount = 0;

  constructor() {
    this.payloads = new Array<P | undefined>(INITIAL_CAPACITY).fill(undefined);
    this.times = new Float64Array(INITIAL_CAPACITY);
    this.mask = INITIAL_CAPACITY - 1;
  }

  /** live returns how many waiters are in the ring (holes not counted). */
  get live(): number {
    return this.liveCount;
  }

  /** endSeq returns the sequence number the next waiter will get. */
  get endSeq(): number {
    return this.nextSeq;
  }

  /** unitCosts returns whether every waiter that ever entered this ring had a cost of 1. */
  get unitCosts(): boolean {
    return this.costs === undefined;
  }

  /** push adds a waiter at the tail and returns its sequence number. */
  push(payload: P, cost: number, timeMs: number): number {
    if (this.nextSeq - this.startSeq > this.mask) this.grow();
    if (cost !== 1 && this.costs === undefined) this.costs = new Float64Array(this.mask + 1).fill(1);
    const index = (this.headIndex + this.nextSeq - this.startSeq) & this.mask;
    this.payloads[index] = payload;
    this.times[index] = timeMs;
    if (this.costs !== undefined) this.costs[index] = cost;
    this.liveCount++;
    return this.nextSeq++;
  }

  /** has returns whether waiter `seq` is still in the ring. */
  has(seq: number): boolean {
    return seq >= this.startSeq && seq < this.nextSeq && this.payloads[this.indexOf(seq)] !== undefined;
  }

  /** payloadAt returns waiter `seq`'s payload, or undefined when it has left. */
  payloadAt(seq: number): P | undefined {
    return seq >= this.startSeq && seq < this.nextSeq ? this.payloads[this.indexOf(seq)] : undefined;
  }

  /** timeAt returns waiter `seq`'s time; `seq` must be in the ring. */
  timeAt(seq: number): number {
    return this.times[this.indexOf(seq)]!;
  }

  /** setTime changes waiter `seq`'s time; `seq` must be in the ring. */
  setTime(seq: number, timeMs: number): void {
    this.times[this.indexOf(seq)] = timeMs;
  }

  /** costAt returns waiter `seq`'s cost; `seq` must be in the ring. */
  costAt(seq: number): number {
    return this.costs === undefined ? 1 : this.costs[this.indexOf(seq)]!;
  }

  /** first returns the sequence number of the oldest waiter, or -1 when the ring is empty. */
  first(): number {
    return this.liveCount > 0 ? this.startSeq : -1;
  }

  /** next returns the first waiter after `seq` (which need not be in the ring), or -1. */
  next(seq: number): number {
    for (let s = Math.max(seq + 1, this.startSeq); s < this.nextSeq; s++) {
      if (this.payloads[this.indexOf(s)] !== undefined) return s;
    }
    return -1;
  }

  /** previous returns the last waiter before `seq` (which need not be in the ring), or -1. */
  previous(seq: number): number {
    for (let s = Math.min(seq, this.nextSeq) - 1; s >= this.startSeq; s--) {
      if (this.payloads[this.indexOf(s)] !== undefined) return s;
    }
    return -1;
  }

  /** take removes waiter `seq` and returns its payload, or undefined when it had already left. */
  take(seq: number): P | undefined {
    const payload = this.payloadAt(seq);
    if (payload === undefined) return undefined;
    this.payloads[this.indexOf(seq)] = undefined;
    this.liveCount--;
    this.trim();
    return payload;
  }

  private indexOf(seq: number): number {
    return (this.headIndex + seq - this.startSeq) & this.mask;
  }

  /**
   * Drops the holes at the head, so the oldest slot always holds a waiter. Holes at the tail stay
   * until they reach the head: sequence numbers are never given out twice.
   */
  private trim(): void {
    while (this.startSeq < this.nextSeq && this.payloads[this.headIndex] === undefined) {
      this.headIndex = (this.headIndex + 1) & this.mask;
      this.startSeq++;
    }
    if (this.liveCount === 0 && this.mask + 1 > SHRINK_ABOVE) this.reallocate(INITIAL_CAPACITY);
  }

  private grow(): void {
    this.reallocate((this.mask + 1) * 2);
  }

  /** Copies the waiters, oldest first, into arrays of `capacity` slots. */
  private reallocate(capacity: number): void {
    const size = this.nextSeq - this.startSeq;
    const payloads = new Array<P | undefined>(capacity).fill(undefined);
    const times = new Float64Array(capacity);
    const costs = this.costs === undefined ? undefined : new Float64Array(capacity).fill(1);
    for (let i = 0; i < size; i++) {
      const from = (this.headIndex + i) & this.mask;
      payloads[i] = this.payloads[from];
      times[i] = this.times[from]!;
      if (costs !== undefined) costs[i] = this.costs![from]!;
    }
    this.payloads = payloads;
    this.times = times;
    this.costs = costs;
    this.mask = capacity - 1;
    this.headIndex = 0;
  }
}
