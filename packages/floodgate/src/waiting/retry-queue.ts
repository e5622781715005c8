import type { Decision } from '../core/decision.js';
import { DeadlineHeap } from './deadline-heap.js';
import { queueFull, waitTimeout } from './errors.js';
import { KeyQueue, type Arrival, type KeyQueueContext } from './key-queue.js';

/**
 * RetryQueue is the line of `acquire` calls on one key of a window policy, which cannot book the
 * future. Only the head tries, at the `retryAfterMs` of its last refusal; each admission lets the
 * next waiter try at once, and the first refusal sets the next try for the line.
 *
 * No waiter can be admitted before the head's next try, so a waiter whose deadline comes sooner
 * is refused as soon as that is known: on arrival, or when a refusal moves the next try past it.
 * A waiter is charged only when admitted, so one that leaves gives nothing back.
 */
export class RetryQueue extends KeyQueue {
  private readonly deadlines = new DeadlineHeap();

  constructor(
    key: string,
    context: KeyQueueContext,
    /** When the head may try again. */
    private nextTryAtMs: number,
  ) {
    super(key, context);
  }

  /** startWaiting opens the queue with a caller refused on the fast path, to try again at `nextTryAtMs`. */
  startWaiting(arrival: Arrival): Promise<void> {
    const promise = this.line(arrival);
    this.alarm.setAt(this.nextTryAtMs);
    return promise;
  }

  enqueue(arrival: Arrival): Promise<void> {
    if (this.ring.live >= this.context.maxQueue) {
      return Promise.reject(queueFull(this.describe(), 'maxQueue', this.context.maxQueue));
    }
    if (arrival.nowMs + arrival.maxWaitMs < this.nextTryAtMs) {
      return Promise.reject(waitTimeout(this.describe(), arrival.maxWaitMs));
    }
    const promise = this.line(arrival);
    this.pump();
    return promise;
  }

  /** Puts the caller at the tail, its deadline in the heap when it has one. */
  private line(arrival: Arrival): Promise<void> {
    const deadlineMs = arrival.nowMs + arrival.maxWaitMs;
    const promise = this.join(arrival.cost, deadlineMs, arrival.signal);
    if (deadlineMs < Infinity) this.deadlines.push(deadlineMs, this.ring.endSeq - 1);
    return promise;
  }

  pump(): void {
    while (!this.busy) {
      if (this.refundDue > 0) {
        this.refundSome();
        continue;
      }
      const seq = this.ring.first();
      const nowMs = this.context.clock.now();
      if (seq < 0 || nowMs < this.nextTryAtMs) break;
      this.tryHead(seq, nowMs);
    }
    if (this.busy) return;
    this.alarm.setAt(this.ring.live > 0 ? this.nextTryAtMs : Infinity);
    this.forgetIfIdle();
  }

  protected giveBack(seq: number): void {
    // Nothing to give back: a waiter is charged only when admitted (a try in flight that lands
    // admitted is refunded). The next try was set for the head's cost: its successor tries now.
    if (seq === this.ring.first()) this.nextTryAtMs = -Infinity;
  }

  private tryHead(seq: number, nowMs: number): void {
    const cost = this.ring.costAt(seq);
    this.answerFor(
      seq,
      () => this.context.table.consume(this.key, cost, nowMs),
      (decision) => this.tried(seq, cost, nowMs, decision),
    );
  }

  /** Records the answer to the head's try at `nowMs`. */
  private tried(seq: number, cost: number, nowMs: number, decision: Decision): void {
    if (!this.ring.has(seq)) {
      // It left while the store answered; its successor tries next.
      if (decision.allowed) this.refundDue += cost;
      return;
    }
    if (decision.allowed) {
      this.admit(seq);
      return;
    }
    // At least 1 ms, so a refusal can never make the line spin.
    this.nextTryAtMs = nowMs + Math.max(1, decision.retryAfterMs);
    this.expireBefore(this.nextTryAtMs);
  }

  /** Refuses every waiter whose deadline comes before `tryAtMs`: none of them can be admitted in time. */
  private expireBefore(tryAtMs: number): void {
    while (this.deadlines.minTimeMs() < tryAtMs) {
      const seq = this.deadlines.pop();
      if (this.ring.has(seq)) this.fail(seq, waitTimeout(this.describe(), undefined));
    }
    // Entries of waiters admitted or gone wait here for their deadline; drop them in bulk.
    if (this.deadlines.size > 2 * this.ring.live + 32) this.deadlines.compact((seq) => this.ring.has(seq));
  }
}
