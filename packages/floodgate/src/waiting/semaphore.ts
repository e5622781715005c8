import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { isTimers, systemTimers, type Timers } from '../core/timers.js';
import { positiveInteger, requireObject } from '../core/validate.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { DeadlineHeap } from './deadline-heap.js';
import { aborted, queueFull, rejectVia, waitTimeout, type Settle } from './errors.js';
import { Permit, reclaimPermit } from './permit.js';
import { checkMaxWaitMs, checkQueueBound, checkSignal } from './validate.js';
import { WaiterRing } from './waiter-ring.js';

/** SemaphoreOptions configures a {@link Semaphore}. */
export interface SemaphoreOptions {
  /** Most permits held at once: a whole number of at least 1. */
  permits: number;
  /** Most callers waiting for a permit (default Infinity); one more is refused at once with `QUEUE_FULL`. */
  maxQueue?: number;
  /**
   * Longest a permit may be held, in ms (default Infinity: until released). A permit still held
   * at the end of its lease is reclaimed when its capacity is needed, so a holder that never
   * releases (a bug) cannot take capacity forever. Set it well above the longest legitimate hold:
   * a reclaimed permit's holder may still be running.
   */
  leaseMs?: number;
  /** Called (in a microtask) with each permit reclaimed at the end of its lease, to report the leak. */
  onReclaim?: (permit: Permit) => void;
  /** Source of the current time (default {@link systemClock}). */
  clock?: Clock;
  /** Timers to wait on (default: the clock when it is also Timers, else {@link systemTimers}). */
  timers?: Timers;
}

/** SemaphoreAcquireOptions are the per-call options of {@link Semaphore.acquire}. */
export interface SemaphoreAcquireOptions {
  /** Longest to wait for a permit, in ms (default Infinity); then the call fails with `WAIT_TIMEOUT`. 0: now or fail. */
  maxWaitMs?: number;
  /** Ends the wait with an `ABORTED` error when it fires. */
  signal?: AbortSignal;
}

/**
 * Semaphore limits how many tasks run at once: {@link acquire} resolves to a {@link Permit} when
 * one of `permits` is free, and the permit's `release` frees it. Waiters get permits first in,
 * first out, and a newcomer never overtakes them.
 *
 * A waiter gives up after `maxWaitMs` or when its signal fires; `maxQueue` bounds the line. With
 * `leaseMs`, a permit held longer is reclaimed once its capacity is needed (by a waiter, or a
 * caller finding none free), and its holder's late `release` then does nothing. There is one
 * timer, set only while callers wait (for the next deadline or lease end).
 *
 * Time faults: leases are granted and judged at the latest time the semaphore has read, so a
 * clock stepped back neither shortens a lease nor reclaims one on an earlier time; it only delays
 * reclaiming (by up to the step). A clock stepped forward by s reclaims leases up to s early: set
 * `leaseMs` well above the longest hold plus the largest step you expect.
 *
 * @example
 * const db = new Semaphore({ permits: 10, maxQueue: 1000, leaseMs: 60_000 });
 * {
 *   using permit = await db.acquire({ maxWaitMs: 5000, signal });
 *   await runQuery();
 * } // released here, even on throw; or call permit.release() in a finally block
 */
export class Semaphore {
  private readonly maxQueue: number;
  private readonly leaseMs: number;
  private readonly onReclaim: ((permit: Permit) => void) | undefined;
  private readonly clock: Clock;
  /** The latest time this semaphore has read, in ms: leases are granted and judged at no earlier time. */
  private latestMs = -Infinity;
  private freeCount: number;
  /** Permits held, oldest grant first: with one lease length, the order their leases end in. */
  private readonly holders = new Set<Permit>();
  private readonly ring = new WaiterRing<Settle<Permit>>();
  private readonly deadlines = new DeadlineHeap();
  private readonly hooks: AbortHooks;
  private readonly alarm: Alarm;

  /** Creates a semaphore with every permit free; no timer is set until someone waits. */
  constructor(options: SemaphoreOptions) {
    const o = requireObject<SemaphoreOptions>(options, 'Semaphore');
    this.freeCount = positiveInteger(o.permits, 'Semaphore.permits');
    this.maxQueue = checkQueueBound(o.maxQueue, 'Semaphore.maxQueue', Infinity);
    this.leaseMs = checkLeaseMs(o.leaseMs);
    if (o.onReclaim !== undefined && typeof o.onReclaim !== 'function') {
      throw new FloodgateError(
        'INVALID_OPTION',
        'Semaphore.onReclaim must be a function taking the reclaimed permit',
        'Semaphore.onReclaim',
      );
    }
    this.onReclaim = o.onReclaim;
    this.clock = o.clock ?? systemClock;
    this.alarm = new Alarm(this.clock, o.timers ?? (isTimers(this.clock) ? this.clock : systemTimers), () =>
      this.serve(),
    );
    this.hooks = new AbortHooks(this.abort);
  }

  /** available returns how many permits are free now (a permit past its lease counts once reclaimed). */
  get available(): number {
    return this.freeCount;
  }

  /** held returns how many permits are held now. */
  get held(): number {
    return this.holders.size;
  }

  /** waiting returns how many callers wait for a permit. */
  get waiting(): number {
    return this.ring.live;
  }

  /**
   * tryAcquire returns a permit if one is free now and nobody waits, else undefined. It reclaims
   * permits past their lease first when none is free.
   */
  tryAcquire(): Permit | undefined {
    if (this.ring.live > 0) return undefined;
    const nowMs = this.leaseTimeMs();
    if (this.freeCount === 0) this.reclaimExpired(nowMs);
    return this.freeCount > 0 ? this.grant(nowMs) : undefined;
  }

  /**
   * acquire resolves to a permit once one is free for this caller, and rejects with a
   * {@link FloodgateError}: `WAIT_TIMEOUT` after `maxWaitMs`, `ABORTED` when `signal` fires (its
   * reason is the error's `cause`), `QUEUE_FULL` at once when `maxQueue` callers already wait.
   */
  acquire(options?: SemaphoreAcquireOptions): Promise<Permit> {
    try {
      const maxWaitMs = checkMaxWaitMs(options?.maxWaitMs, 'maxWaitMs');
      const signal = checkSignal(options?.signal, 'signal');
      if (signal?.aborted === true) return Promise.reject(aborted('Semaphore.acquire', signal));
      const permit = this.tryAcquire();
      if (permit !== undefined) return Promise.resolve(permit);
      if (this.ring.live >= this.maxQueue)
        return Promise.reject(queueFull('Semaphore.acquire', 'maxQueue', this.maxQueue));
      if (maxWaitMs === 0) return Promise.reject(waitTimeout('Semaphore.acquire', maxWaitMs));
      return this.wait(this.clock.now() + maxWaitMs, signal);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private wait(deadlineMs: number, signal: AbortSignal | undefined): Promise<Permit> {
    let settle!: Settle<Permit>;
    const promise = new Promise<Permit>((resolve) => {
      settle = resolve;
    });
    const seq = this.ring.push(settle, 1, deadlineMs);
    if (deadlineMs < Infinity) this.deadlines.push(deadlineMs, seq);
    if (signal !== undefined) this.hooks.add(seq, signal);
    this.rearm();
    return promise;
  }

  private grant(nowMs: number): Permit {
    this.freeCount--;
    const permit = new Permit(this.giveBack, nowMs, nowMs + this.leaseMs);
    this.holders.add(permit);
    return permit;
  }

  private readonly giveBack = (permit: Permit): void => {
    if (!this.holders.delete(permit)) return;
    this.freeCount++;
    this.serve();
  };

  /** Hands free permits to waiters in order, reclaiming leases when short, and refuses waiters out of time. */
  private serve(): void {
    const nowMs = this.leaseTimeMs();
    if (this.ring.live > this.freeCount) this.reclaimExpired(nowMs);
    for (let seq = this.ring.first(); seq >= 0 && this.freeCount > 0; seq = this.ring.first()) {
      const settle = this.ring.take(seq)!;
      this.hooks.remove(seq);
      settle(this.grant(nowMs));
    }
    while (this.deadlines.minTimeMs() <= nowMs) {
      const seq = this.deadlines.pop();
      const settle = this.ring.take(seq);
      if (settle === undefined) continue;
      this.hooks.remove(seq);
      rejectVia(settle, waitTimeout('Semaphore.acquire', undefined));
    }
    this.rearm();
  }

  /**
   * The time leases are granted and judged at: the clock, but never before a time already read. A
   * clock stepped back so neither shortens a new lease (it would end before older ones) nor judges
   * one on a time earlier than one already seen; leases end in grant order. Deadlines of waiters
   * stay on the clock itself.
   */
  private leaseTimeMs(): number {
    const nowMs = this.clock.now();
    if (nowMs > this.latestMs) this.latestMs = nowMs;
    return this.latestMs;
  }

  /** Takes back every permit whose lease ended by `nowMs`. */
  private reclaimExpired(nowMs: number): void {
    for (const permit of this.holders) {
      // Grants come at times that never go back, so leases end in grant order.
      if (permit.expiresAtMs > nowMs) break;
      this.holders.delete(permit);
      if (!permit[reclaimPermit]()) continue;
      this.freeCount++;
      const report = this.onReclaim;
      if (report !== undefined) queueMicrotask(() => report(permit));
    }
  }

  /** Arms the alarm for the next deadline or lease end while someone waits; disarms it otherwise. */
  private rearm(): void {
    // Deadlines of waiters served already must not wake the alarm early.
    while (this.deadlines.size > 0 && !this.ring.has(this.deadlines.minSeq())) this.deadlines.pop();
    if (this.deadlines.size > 2 * this.ring.live + 32) this.deadlines.compact((seq) => this.ring.has(seq));
    if (this.ring.live === 0) {
      this.alarm.setAt(Infinity);
      return;
    }
    const oldest = this.holders.values().next();
    const leaseEndMs = oldest.done === true ? Infinity : oldest.value.expiresAtMs;
    this.alarm.setAt(Math.min(this.deadlines.minTimeMs(), leaseEndMs));
  }

  private readonly abort = (seq: number, signal: AbortSignal): void => {
    const settle = this.ring.take(seq);
    if (settle === undefined) return;
    rejectVia(settle, aborted('Semaphore.acquire', signal));
    this.rearm();
  };
}

function checkLeaseMs(value: unknown): number {
  if (value === undefined) return Infinity;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `Semaphore.leaseMs must be a number of ms above 0 (Infinity: no lease), got ${describeValue(value)}`,
      'Semaphore.leaseMs',
    );
  }
  return value;
}
