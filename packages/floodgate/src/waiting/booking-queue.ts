import { queueFull, waitTimeout } from './errors.js';
import { KeyQueue, type Arrival } from './key-queue.js';

/**
 * BookingQueue is the line of `acquire` calls on one key of a policy that can book the future
 * (token bucket, leaky bucket, GCRA: the store has `reserve`). Each caller books its slot as it
 * arrives, so it learns at once whether it can be served within `maxWaitMs`, and is then simply
 * admitted at its due time: no retries, no herd.
 *
 * Waiters before {@link bookedEnd} hold a booking and their ring time is their due time; the
 * rest (an asynchronous store still answering, or waiters being booked again) are still to book
 * and their ring time is their deadline.
 *
 * A waiter that leaves gives its booking back, and those booked after it move up so that the
 * admissions are those of a line it was never in:
 * - the last booking is refunded as it is;
 * - with unit costs, each later waiter takes the slot of the one before it and the last slot is
 *   refunded: one store call;
 * - otherwise the later bookings are refunded and booked again, in order.
 */
export class BookingQueue extends KeyQueue {
  private bookedEnd = 0;
  /** Due time of the last booking: a later one is never due before it (first in, first out). */
  private lastDueMs = -Infinity;
  /** Bumped whenever bookings are given back, so that an answer from before is known stale. */
  private epoch = 0;

  /** startBooked opens the queue with a caller that booked on the fast path, due at `dueMs`. */
  startBooked(arrival: Arrival, dueMs: number): Promise<void> {
    const promise = this.join(arrival.cost, dueMs, arrival.signal);
    this.bookedEnd = this.ring.endSeq;
    this.lastDueMs = dueMs;
    this.alarm.setAt(dueMs);
    return promise;
  }

  enqueue(arrival: Arrival): Promise<void> {
    if (this.ring.live >= this.context.maxQueue) {
      return Promise.reject(queueFull(this.describe(), 'maxQueue', this.context.maxQueue));
    }
    const promise = this.join(arrival.cost, arrival.nowMs + arrival.maxWaitMs, arrival.signal);
    this.pump();
    return promise;
  }

  pump(): void {
    while (!this.busy) {
      if (this.refundDue > 0) this.refundSome();
      else if (!this.bookNext()) break;
    }
    this.admitDue();
  }

  protected giveBack(seq: number): void {
    if (seq >= this.bookedEnd) return; // not booked; a booking still in flight is refunded when it lands
    this.epoch++;
    const after = this.ring.next(seq);
    if (after < 0 || after >= this.bookedEnd) {
      this.refundDue += this.ring.costAt(seq);
      const before = this.ring.previous(seq);
      this.lastDueMs = before >= 0 ? this.ring.timeAt(before) : -Infinity;
    } else if (this.ring.unitCosts) {
      this.handOver(seq, after);
    } else {
      this.unbookFrom(seq, after);
    }
  }

  /** Each booked waiter from `after` on takes the slot of the one before it; the last slot goes back. */
  private handOver(seq: number, after: number): void {
    let slotMs = this.ring.timeAt(seq);
    for (let s = after; s >= 0 && s < this.bookedEnd; s = this.ring.next(s)) {
      const ownMs = this.ring.timeAt(s);
      this.ring.setTime(s, slotMs);
      this.lastDueMs = slotMs;
      slotMs = ownMs;
    }
    this.refundDue += 1;
  }

  /** Gives back the bookings of `seq` and of every booked waiter after it, to book them again. */
  private unbookFrom(seq: number, after: number): void {
    this.refundDue += this.ring.costAt(seq);
    for (let s = after; s >= 0 && s < this.bookedEnd; s = this.ring.next(s)) {
      this.refundDue += this.ring.costAt(s);
      this.ring.setTime(s, Infinity); // their new slot is no later than the old: no deadline to check
    }
    this.bookedEnd = seq + 1;
    const before = this.ring.previous(seq);
    this.lastDueMs = before >= 0 ? this.ring.timeAt(before) : -Infinity;
  }

  /** Books the first waiter still to book; false when there is none. */
  private bookNext(): boolean {
    const seq = this.ring.next(this.bookedEnd - 1);
    if (seq < 0) return false;
    const nowMs = this.context.clock.now();
    const maxWaitMs = this.ring.timeAt(seq) - nowMs;
    if (maxWaitMs < 0) {
      this.fail(seq, waitTimeout(this.describe(), undefined));
      return true;
    }
    const cost = this.ring.costAt(seq);
    const epoch = this.epoch;
    // The store counts the wait from when it runs the booking (Redis: its own TIME, after the
    // request's transit), so the slot is counted from the answer's arrival: never before the slot
    // the store booked, at most the reply's return trip after it. A synchronous store answers at once.
    this.answerFor(
      seq,
      () => this.context.table.reserve!(this.key, cost, nowMs, maxWaitMs),
      (waitMs) => this.booked(seq, cost, this.context.clock.now() + waitMs, waitMs < 0, epoch),
    );
    return true;
  }

  /** Records the store's answer to a booking made in `epoch`: due at `dueMs`, or refused. */
  private booked(seq: number, cost: number, dueMs: number, refused: boolean, epoch: number): void {
    if (refused) {
      // Nothing was charged. After a give-back the waiter is simply booked again.
      if (epoch === this.epoch) this.fail(seq, waitTimeout(this.describe(), undefined));
      return;
    }
    if (epoch !== this.epoch || !this.ring.has(seq)) {
      this.refundDue += cost;
      return;
    }
    this.lastDueMs = Math.max(dueMs, this.lastDueMs);
    this.ring.setTime(seq, this.lastDueMs);
    this.bookedEnd = seq + 1;
  }

  /** Admits the booked waiters now due, re-arms the alarm for the next, forgets an empty queue. */
  private admitDue(): void {
    const nowMs = this.context.clock.now();
    let seq = this.ring.first();
    while (seq >= 0 && seq < this.bookedEnd && this.ring.timeAt(seq) <= nowMs) {
      this.admit(seq);
      seq = this.ring.first();
    }
    this.alarm.setAt(seq >= 0 && seq < this.bookedEnd ? this.ring.timeAt(seq) : Infinity);
    this.forgetIfIdle();
  }
}
