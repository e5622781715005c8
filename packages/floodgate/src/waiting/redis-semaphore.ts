import { randomUUID } from 'node:crypto';
import { FloodgateError } from '../core/errors.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { DeadlineHeap } from './deadline-heap.js';
import { aborted, asError, queueFull, rejectVia, waitTimeout, type Settle } from './errors.js';
import { checkMaxWaitMs, checkSignal } from './validate.js';
import { WaiterRing } from './waiter-ring.js';
import { Circuit } from '../stores/redis/circuit.js';
import { RedisPermit, type PermitLink } from './redis-permit.js';
import { ScriptRunner, replyError } from '../stores/redis/runner.js';
import { SEMAPHORE_SCRIPT, acquireReplyOf, integerOf } from '../stores/redis/scripts/semaphore.js';
import { settingsOf, type RedisSemaphoreOptions, type SemaphoreSettings } from './redis-semaphore-options.js';

export { RedisPermit, type RedisPermitState } from './redis-permit.js';
export { SEMAPHORE_SCRIPT } from '../stores/redis/scripts/semaphore.js';
export type { RedisSemaphoreOptions } from './redis-semaphore-options.js';

/** RedisSemaphoreAcquireOptions are the per-call options of {@link RedisSemaphore.acquire}. */
export interface RedisSemaphoreAcquireOptions {
  /** Longest to wait for a permit, in ms (default Infinity); then the call fails with `WAIT_TIMEOUT`. 0: one try, no wait. */
  maxWaitMs?: number;
  /** Ends the wait with an `ABORTED` error when it fires. */
  signal?: AbortSignal;
}

/** A caller in this process's line; `oneTry` callers (maxWaitMs 0) leave after their first try. */
interface Waiter {
  readonly settle: Settle<RedisPermit>;
  readonly oneTry: boolean;
}

/** Most callers one acquire script tries to admit (never more than `permits`). */
const MAX_BATCH = 64;
const WHAT = 'RedisSemaphore.acquire';

/**
 * RedisSemaphore limits how many tasks run at once across every process sharing a Redis:
 * {@link acquire} resolves to a {@link RedisPermit} once one of `permits` is free, and the permit's
 * `release` frees it. A permit not released nor renewed within `leaseMs` is reclaimed by Redis, so
 * a holder that dies cannot keep it.
 *
 * Each operation is one atomic script on one key (the `name` is its hash tag), and leases run on
 * the server's `TIME`, never a client's clock. Holders are random ids, so one process's release
 * can never free another's permit.
 *
 * Waiting: callers in one process form one first-in, first-out line; its head tries Redis (several
 * at once, in line order, in one script), then tries again when a permit of this process is
 * released, or after `pollMs` (sooner when the earliest lease ends sooner). There is one timer,
 * set only while callers wait. Across processes the order is not first-in, first-out: whoever
 * tries first after a permit frees up gets it.
 *
 * Failures: a Redis error or a call unanswered within `timeoutMs` rejects the callers it was for
 * with `STORE_ERROR` or `STORE_TIMEOUT`; every promise settles.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisSemaphore, ioredisAdapter } from 'floodgate/redis';
 * const exports = new RedisSemaphore({ adapter: ioredisAdapter(new Redis()), name: 'exports', permits: 4, leaseMs: 30_000 });
 * {
 *   await using permit = await exports.acquire({ maxWaitMs: 10_000, signal });
 *   await runExport(); // a longer job calls permit.renew() well within each 30 s
 * } // released here, even on throw
 */
export class RedisSemaphore {
  private readonly s: SemaphoreSettings;
  private readonly runner: ScriptRunner;
  private readonly link: PermitLink;
  private readonly ring = new WaiterRing<Waiter>();
  private readonly deadlines = new DeadlineHeap();
  private readonly hooks: AbortHooks;
  private readonly alarm: Alarm;
  /** True once a try found no permit free, until the line empties: newcomers must then wait. */
  private lineWaits = false;
  private trying = false;
  private pumpQueued = false;
  /** A permit of this process was freed while a try was in flight: try again at once after it. */
  private wokenDuringTry = false;
  private retryAtMs = Infinity;

  /** Creates a semaphore over `options.adapter`; it sends nothing to Redis until first used. */
  constructor(options: RedisSemaphoreOptions) {
    this.s = settingsOf(options);
    this.runner = new ScriptRunner(
      this.s.adapter,
      this.s.timeout,
      new Circuit({ failuresToOpen: 3, probeIntervalMs: 250 }),
    );
    this.alarm = new Alarm(this.s.clock, this.s.timers, () => this.serve());
    this.hooks = new AbortHooks(this.abort);
    this.link = { releaseHolder: (id) => this.releaseHolder(id), renewHolder: (id) => this.renewHolder(id) };
  }

  /** waiting returns how many callers of this process are in line for a permit. */
  get waiting(): number {
    return this.ring.live;
  }

  /** holders resolves to how many permits are held now, across every process (leases ended not counted). */
  async holders(): Promise<number> {
    const reply = await this.run(['count']);
    return countOf(reply, 'count');
  }

  /** available resolves to how many permits are free now, across every process. */
  async available(): Promise<number> {
    return Math.max(0, this.s.permits - (await this.holders()));
  }

  /**
   * acquire resolves to a permit once one is free for this caller, and rejects with a
   * {@link FloodgateError}: `WAIT_TIMEOUT` after `maxWaitMs` (with 0, when the one try finds
   * none free, or at once when callers of this process already wait); `ABORTED` when `signal`
   * fires (its reason is the error's `cause`); `QUEUE_FULL` when `maxQueue` callers of this process
   * already wait (at once, or after the first try: callers trying for the first time since the
   * line was empty do not count until they find no permit free); `STORE_ERROR` / `STORE_TIMEOUT`
   * when Redis fails. A caller that gives up never holds a permit: one granted to it in flight is
   * handed to the next caller in line, or released.
   */
  acquire(options?: RedisSemaphoreAcquireOptions): Promise<RedisPermit> {
    try {
      const maxWaitMs = checkMaxWaitMs(options?.maxWaitMs, 'maxWaitMs');
      const signal = checkSignal(options?.signal, 'signal');
      if (signal?.aborted === true) return Promise.reject(aborted(WHAT, signal));
      if (this.lineWaits && this.ring.live >= this.s.maxQueue)
        return Promise.reject(queueFull(WHAT, 'maxQueue', this.s.maxQueue));
      if (this.lineWaits && maxWaitMs === 0) return Promise.reject(waitTimeout(WHAT, maxWaitMs));
      return this.join(maxWaitMs, signal);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private join(maxWaitMs: number, signal: AbortSignal | undefined): Promise<RedisPermit> {
    let settle!: Settle<RedisPermit>;
    const promise = new Promise<RedisPermit>((resolve) => {
      settle = resolve;
    });
    const deadlineMs = maxWaitMs === 0 ? Infinity : this.s.clock.now() + maxWaitMs;
    const seq = this.ring.push({ settle, oneTry: maxWaitMs === 0 }, 1, deadlineMs);
    if (deadlineMs < Infinity) this.deadlines.push(deadlineMs, seq);
    if (signal !== undefined) this.hooks.add(seq, signal);
    this.queuePump();
    return promise;
  }

  /** Tries once the current tick is over, so that callers arriving together share one script. */
  private queuePump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** Sends one acquire script for the head of the line, unless one is in flight or nobody waits. */
  private pump(): void {
    if (this.trying || this.ring.live === 0) return this.rearm();
    const batch: number[] = [];
    const size = Math.min(this.s.permits, MAX_BATCH);
    for (let seq = this.ring.first(); seq >= 0 && batch.length < size; seq = this.ring.next(seq)) batch.push(seq);
    const ids = batch.map(() => randomUUID());
    this.trying = true;
    this.wokenDuringTry = false;
    this.retryAtMs = Infinity;
    this.run(['acquire', String(this.s.permits), String(this.s.leaseMs), ...ids]).then(
      (reply) => this.tried(batch, ids, reply),
      (error: unknown) => this.failed(batch, ids, error),
    );
    this.rearm();
  }

  /** Hands the granted permits out in line order, then decides when to try again. */
  private tried(batch: readonly number[], ids: readonly string[], reply: unknown): void {
    const answer = acquireReplyOf(reply);
    if (answer === undefined || answer.granted > batch.length)
      return this.failed(
        batch,
        ids,
        replyError('the semaphore acquire script', '[granted, held, msUntilFirstLeaseEnds]', reply),
      );
    this.trying = false;
    const unclaimed: string[] = [];
    for (let i = 0; i < answer.granted; i++) {
      const waiter = this.take(batch[i]!);
      if (waiter === undefined) unclaimed.push(ids[i]!);
      else waiter.settle(new RedisPermit(this.link, ids[i]!));
    }
    // A permit granted to a caller that gave up in flight goes to the next in line, or back.
    const leftover = unclaimed.filter((id) => !this.handOver(id));
    if (leftover.length > 0) this.releaseQuietly(leftover);
    if (answer.granted < batch.length) this.missed(answer.msUntilFirstLeaseEnds);
    if (answer.granted === batch.length || this.wokenDuringTry) this.retryAtMs = -Infinity;
    this.serve();
  }

  /** Gives permit `id` to the first caller in line; false when nobody waits. */
  private handOver(id: string): boolean {
    const seq = this.ring.first();
    const waiter = seq >= 0 ? this.take(seq) : undefined;
    if (waiter === undefined) return false;
    waiter.settle(new RedisPermit(this.link, id));
    return true;
  }

  /** No permit was free: callers in line now wait, except one-try callers and those past `maxQueue`. */
  private missed(msUntilFirstLeaseEnds: number): void {
    this.lineWaits = this.ring.live > 0;
    let position = 0;
    for (let seq = this.ring.first(); seq >= 0; seq = this.ring.next(seq)) {
      const waiter = this.ring.payloadAt(seq)!;
      if (waiter.oneTry) this.refuse(seq, waitTimeout(WHAT, 0));
      else if (++position > this.s.maxQueue) this.refuse(seq, queueFull(WHAT, 'maxQueue', this.s.maxQueue));
    }
    const pollMs = msUntilFirstLeaseEnds >= 0 ? Math.min(this.s.pollMs, msUntilFirstLeaseEnds + 1) : this.s.pollMs;
    this.retryAtMs = this.s.clock.now() + pollMs;
  }

  /** Rejects the callers the failed script was for; an unanswered one may have run, so its ids are released. */
  private failed(batch: readonly number[], ids: readonly string[], error: unknown): void {
    this.trying = false;
    const cause = asError(error);
    for (const seq of batch) {
      if (this.ring.has(seq)) this.refuse(seq, cause);
    }
    if (!(cause instanceof FloodgateError) || cause.code !== 'STORE_ERROR') this.releaseQuietly(ids);
    this.retryAtMs = -Infinity;
    this.serve();
  }

  /** Refuses callers past their deadline and tries again when due; runs when the alarm rings. */
  private serve(): void {
    const nowMs = this.s.clock.now();
    while (this.deadlines.minTimeMs() <= nowMs) {
      const seq = this.deadlines.pop();
      if (this.ring.has(seq)) this.refuse(seq, waitTimeout(WHAT, undefined));
    }
    if (this.retryAtMs <= nowMs) this.pump();
    else this.rearm();
  }

  /** Arms the alarm for the next deadline or retry while callers wait (and no try is in flight for a retry). */
  private rearm(): void {
    while (this.deadlines.size > 0 && !this.ring.has(this.deadlines.minSeq())) this.deadlines.pop();
    if (this.deadlines.size > 2 * this.ring.live + 32) this.deadlines.compact((seq) => this.ring.has(seq));
    if (this.ring.live === 0) return this.alarm.setAt(Infinity);
    const retryAtMs = this.trying ? Infinity : this.retryAtMs;
    this.alarm.setAt(Math.min(this.deadlines.minTimeMs(), retryAtMs));
  }

  /** A permit of this process was freed: the line tries again now, or once the try in flight ends. */
  private wake(): void {
    if (this.ring.live === 0) return;
    if (this.trying) {
      this.wokenDuringTry = true;
      return;
    }
    this.retryAtMs = -Infinity;
    this.queuePump();
  }

  private take(seq: number): Waiter | undefined {
    const waiter = this.ring.take(seq);
    if (waiter === undefined) return undefined;
    this.hooks.remove(seq);
    if (this.ring.live === 0) this.lineWaits = false;
    return waiter;
  }

  private refuse(seq: number, error: Error): void {
    const waiter = this.take(seq);
    if (waiter !== undefined) rejectVia(waiter.settle, error);
  }

  private readonly abort = (seq: number, signal: AbortSignal): void => {
    this.refuse(seq, aborted(WHAT, signal));
    this.rearm();
  };

  private async releaseHolder(id: string): Promise<boolean> {
    const freed = countOf(await this.run(['release', id]), 'release') > 0;
    if (freed) this.wake();
    return freed;
  }

  private async renewHolder(id: string): Promise<boolean> {
    return countOf(await this.run(['renew', String(this.s.leaseMs), id]), 'renew') > 0;
  }

  /** Releases ids no caller will hold; a failure is left to their leases. */
  private releaseQuietly(ids: readonly string[]): void {
    this.run(['release', ...ids]).then(
      (reply) => {
        if (reply !== 0) this.wake();
      },
      () => undefined,
    );
  }

  private run(args: readonly string[]): Promise<unknown> {
    return this.runner.run(SEMAPHORE_SCRIPT, [this.s.key], args);
  }
}

function countOf(reply: unknown, op: string): number {
  const count = integerOf(reply);
  if (count === undefined || count < 0) throw replyError(`the semaphore ${op} script`, 'a count', reply);
  return count;
}
