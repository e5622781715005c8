import { FloodgateError } from '../core/errors.js';
import { checkPermits, timeoutMicrosFrom } from '../core/smooth/smooth-arguments.js';
import { clockMicros } from '../core/smooth/smooth-rate-limiter.js';
import { replyError } from '../stores/redis/runner.js';
import { SMOOTH_SCRIPT, smoothAnswersOf, type SmoothAnswer } from '../stores/redis/scripts/smooth.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { DeadlineHeap } from './deadline-heap.js';
import { aborted, asError, waitTimeout } from './errors.js';
import {
  burstySettings,
  checkFleetRate,
  warmingUpSettings,
  type RedisSmoothBurstyOptions,
  type RedisSmoothWarmingUpOptions,
  type SmoothSettings,
} from './redis-smooth-options.js';
import { SmoothFailure } from './smooth-failure.js';
import { pushOpArgs, waits, WakeLine, type Booking, type SmoothCall, type SmoothCallKind } from './smooth-call.js';
import { checkMaxWaitMs, checkSignal } from './validate.js';

export type {
  RedisSmoothBurstyOptions,
  RedisSmoothOptions,
  RedisSmoothWarmingUpOptions,
} from './redis-smooth-options.js';

/** RedisSmoothWaitOptions are the per-call options of {@link RedisSmoothLimiter.acquire} and {@link RedisSmoothLimiter.tryAcquire}. */
export interface RedisSmoothWaitOptions {
  /** Ends the wait with an `ABORTED` error when it fires; a reservation not yet due is released when that is safe. */
  signal?: AbortSignal;
}

/** RedisSmoothAcquireOptions are the per-call options of {@link RedisSmoothLimiter.acquire}. */
export interface RedisSmoothAcquireOptions extends RedisSmoothWaitOptions {
  /**
   * Longest the call may take in all, Redis's answer included, in ms (default Infinity). Redis
   * reserves only a wait that fits (as `tryAcquire` does); when it does not, or the answer comes
   * too late, the call rejects with `WAIT_TIMEOUT` and its reservation, if any, is released when
   * that is safe.
   */
  maxWaitMs?: number;
}

/** Most operations sent in one script. */
const MAX_BATCH = 128;
const MICROS_PER_SECOND = 1e6;

/**
 * RedisSmoothLimiter is Guava's RateLimiter shared by every process on a Redis or Redis Cluster:
 * the fleet as a whole hands out permits at the rate, as one Guava limiter would. Each reservation
 * is one atomic script on one key (the name is its hash tag), on the server's `TIME`, keeping
 * Guava's stored permits and next-free moment: the first request never waits, a big request pays
 * later (the next caller waits for it), idle time stores permits (free in a
 * {@link RedisSmoothLimiter.bursty | bursty} limiter, at a falling cost in a
 * {@link RedisSmoothLimiter.warmingUp | warming-up} one), and `setRate` keeps the state as Guava's
 * does. The script restates the rules of the in-process {@link SmoothRateLimiter}, and tests check
 * the waits against real Guava to the microsecond.
 *
 * Waiting happens here: a caller sleeps on this process's clock until its reservation is due
 * (from the moment Redis's answer arrived), with one timer for the whole line; callers of one
 * process go in the order Redis reserved for them. Calls made in one turn of the event loop share
 * one script.
 *
 * Giving up: a caller whose `signal` fires, or whose `maxWaitMs` passes, rejects at once; its
 * reservation is released when that is safe, i.e. when it is still the latest one on the fleet's
 * limiter and not yet due (the schedule then is as if it had never been made); otherwise the
 * fleet's later callers keep their places and the permits are spent.
 *
 * Failures: each script is bounded by the store's timeout and goes through its circuits; a Redis
 * error or silence is decided by `onError` (default the store's; see {@link RedisSmoothOptions.onError}).
 * A reservation that Redis made after its call was cut off is released when that is safe.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisStore, RedisSmoothLimiter, ioredisAdapter } from 'floodgate/redis';
 * const store = new RedisStore({ adapter: ioredisAdapter(new Redis()) });
 * const partnerApi = RedisSmoothLimiter.bursty({ store, name: 'partner-api', permitsPerSecond: 20 });
 * await partnerApi.acquire();                       // the whole fleet calls at most 20 per second
 * if (await partnerApi.tryAcquire(1, 500)) send();  // only if a permit is free within 500 ms
 */
export class RedisSmoothLimiter {
  private readonly line = new WakeLine();
  private readonly live = new Map<number, SmoothCall>();
  private readonly deadlines = new DeadlineHeap();
  private readonly hooks: AbortHooks;
  private readonly alarm: Alarm;
  private readonly failure: SmoothFailure;
  private pending: SmoothCall[] = [];
  private flushQueued = false;
  private seq = 0;
  /** The fleet's rate as this process last heard it (for the local fallback). */
  private knownRate: number;

  private constructor(private readonly s: SmoothSettings) {
    this.knownRate = s.permitsPerSecond;
    this.alarm = new Alarm(s.clock, s.timers, () => this.ring());
    this.hooks = new AbortHooks((seq, signal) => this.giveUp(seq, aborted(`${this.what}.acquire`, signal)));
    this.failure = new SmoothFailure(s, () => this.knownRate);
  }

  /**
   * bursty returns a fleet-wide limiter that stores up to `maxBurstSeconds` (default 1) seconds of
   * unused permits and hands them out without waiting, like Guava's `RateLimiter.create(rate)`. It
   * sends nothing until first used; the first call on its name creates it, empty, at that moment.
   */
  static bursty(options: RedisSmoothBurstyOptions): RedisSmoothLimiter {
    return new RedisSmoothLimiter(burstySettings(options));
  }

  /**
   * warmingUp returns a fleet-wide limiter that starts cold and speeds up to its rate over
   * `warmupMs` of saturating demand, cooling down when idle, like Guava's
   * `RateLimiter.create(rate, warmupPeriod)`; a fully cold permit costs `coldFactor` (default 3)
   * stable intervals. The first call on its name creates it, cold, at that moment.
   */
  static warmingUp(options: RedisSmoothWarmingUpOptions): RedisSmoothLimiter {
    return new RedisSmoothLimiter(warmingUpSettings(options));
  }

  /** waiting returns how many callers of this process sleep until their reservations are due. */
  get waiting(): number {
    return this.line.live;
  }

  /**
   * acquire resolves to the seconds its reservation waited (0 if none), once `permits` (a whole
   * number, default 1) reserved on the fleet's limiter are due. It waits as long as it takes,
   * unless `maxWaitMs` or `signal` says otherwise (see {@link RedisSmoothAcquireOptions}).
   */
  acquire(permits = 1, options: RedisSmoothAcquireOptions = {}): Promise<number> {
    return this.call('acquire', permits, () => {
      const maxWaitMs = checkMaxWaitMs(options.maxWaitMs, `${this.what}.maxWaitMs`);
      const timeout = maxWaitMs === Infinity ? undefined : timeoutMicrosFrom(maxWaitMs, 'maxWaitMs', 1000);
      return { timeout, maxWaitMs, signal: options.signal };
    });
  }

  /**
   * tryAcquire resolves to true once `permits` (default 1) are due, when Redis could reserve them
   * with a wait of at most `timeoutMs` (default 0: free now; negative counts as 0; Infinity: any
   * wait), and to false at once, reserving nothing, otherwise. Like Guava, it judges by the
   * next-free moment alone, so a request the stored permits would cover still fails while an
   * earlier request's cost is unpaid.
   */
  tryAcquire(permits = 1, timeoutMs = 0, options: RedisSmoothWaitOptions = {}): Promise<boolean> {
    return this.call('tryAcquire', permits, () => ({
      timeout: timeoutOf(timeoutMs),
      maxWaitMs: Infinity,
      signal: options.signal,
    }));
  }

  /**
   * reserve resolves to the wait in ms (whole µs) before `permits` (default 1) may be used, having
   * reserved them on the fleet's limiter; the caller does the waiting (Guava's `reserve`).
   */
  reserve(permits = 1): Promise<number> {
    return this.call('reserve', permits, () => ({ timeout: undefined, maxWaitMs: Infinity, signal: undefined }));
  }

  /**
   * tryReserve resolves to the wait in ms before `permits` may be used, having reserved them, when
   * that wait is at most `timeoutMs` (as {@link tryAcquire} judges it), and to false otherwise,
   * reserving nothing. The caller does the waiting.
   */
  tryReserve(permits = 1, timeoutMs = 0): Promise<number | false> {
    return this.call('tryReserve', permits, () => ({
      timeout: timeoutOf(timeoutMs),
      maxWaitMs: Infinity,
      signal: undefined,
    }));
  }

  /**
   * setRate changes the fleet's rate from now on, keeping the share of stored permits as Guava
   * does (new max × stored / old max); waits already handed out stay. It rejects when Redis fails,
   * whatever `onError` says: the caller must know the rate did not change.
   */
  setRate(permitsPerSecond: number): Promise<void> {
    try {
      const rate = checkFleetRate(permitsPerSecond, 'permitsPerSecond');
      return this.enqueue('setRate', { permits: 1, timeout: undefined, rate, deadlineMs: Infinity });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** getRate resolves to the fleet's rate in permits per second (as Guava computes it back from the interval). */
  getRate(): Promise<number> {
    return this.enqueue('getRate', { permits: 1, timeout: undefined, rate: NaN, deadlineMs: Infinity });
  }

  private get what(): string {
    return `RedisSmoothLimiter ${JSON.stringify(this.s.name)}`;
  }

  /** Checks a call's arguments (`options` may throw), then queues it; every failure is a rejection. */
  private call<T>(
    kind: SmoothCallKind,
    permits: number,
    options: () => { timeout: bigint | undefined; maxWaitMs: number; signal: AbortSignal | undefined },
  ): Promise<T> {
    try {
      checkPermits(permits);
      const o = { permits, ...options() };
      const signal = checkSignal(o.signal, 'signal');
      if (signal?.aborted === true) return Promise.reject(aborted(`${this.what}.acquire`, signal));
      const deadlineMs = o.maxWaitMs === Infinity ? Infinity : this.s.clock.now() + o.maxWaitMs;
      const promise = this.enqueue<T>(kind, { permits: o.permits, timeout: o.timeout, rate: NaN, deadlineMs });
      const seq = this.seq;
      if (deadlineMs < Infinity) {
        this.deadlines.push(deadlineMs, seq);
        this.rearm();
      }
      if (signal !== undefined) this.hooks.add(seq, signal);
      return promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private enqueue<T>(
    kind: SmoothCallKind,
    o: { permits: number; timeout: bigint | undefined; rate: number; deadlineMs: number; release?: Booking },
  ): Promise<T> {
    let resolve!: (value: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res as (value: unknown) => void;
      reject = rej;
    });
    const call: SmoothCall = {
      kind,
      seq: ++this.seq,
      permits: o.permits,
      timeoutMicros: o.timeout,
      rate: o.rate,
      release: o.release,
      deadlineMs: o.deadlineMs,
      resolve,
      reject,
      settled: false,
      booking: undefined,
      waitMicros: 0,
      wakeAtMs: 0,
    };
    if (kind !== 'release') this.live.set(call.seq, call);
    this.pending.push(call);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // Once per turn of the event loop, as the store's batches: calls made in several callbacks
      // of one turn (replies parsed together, timers due together) share one script.
      setImmediate(this.flush);
    }
    return promise;
  }

  /** Sends the calls of this turn of the event loop, in order, as scripts of at most {@link MAX_BATCH} operations. */
  private readonly flush = (): void => {
    this.flushQueued = false;
    const calls = this.pending;
    this.pending = [];
    for (let i = 0; i < calls.length; i += MAX_BATCH) this.send(calls.slice(i, i + MAX_BATCH));
  };

  private send(batch: SmoothCall[]): void {
    const s = this.s;
    const time = s.testTime ? String(clockMicros(s.clock)) : '';
    const args = [time, ...s.modelArgs, String(s.permitsPerSecond), s.ttlArg];
    for (const call of batch) pushOpArgs(args, call);
    s.runner
      .run(SMOOTH_SCRIPT, [s.key], args, 'smooth', (reply) => this.lateReply(batch, reply))
      .then(
        (reply) => this.answered(batch, reply),
        (error: unknown) => this.failed(batch, asError(error)),
      );
  }

  private answered(batch: readonly SmoothCall[], reply: unknown): void {
    const answers = smoothAnswersOf(reply, batch.length);
    if (answers === undefined) {
      const error = replyError('the smooth script', 'its answers, five fields per operation', reply);
      for (const call of batch) this.settle(call, error);
      return;
    }
    this.failure.recovered();
    const nowMs = this.s.clock.now();
    batch.forEach((call, i) => this.answer(call, answers[i]!, nowMs));
    this.rearm();
  }

  private answer(call: SmoothCall, a: SmoothAnswer, nowMs: number): void {
    if (call.kind === 'release') return;
    if (call.kind === 'setRate' || call.kind === 'getRate') {
      this.knownRate = MICROS_PER_SECOND / Number(a.text);
      return this.settle(call, undefined, call.kind === 'getRate' ? this.knownRate : undefined);
    }
    if (!a.done) return this.refused(call);
    if (call.settled) return this.releaseQuietly({ version: a.version });
    if (waits(call)) call.booking = { version: a.version };
    this.granted(call, a.waitMicros, nowMs);
  }

  /** A reservation was made (by Redis or the failure policy): answer it, or line the caller up until it is due. */
  private granted(call: SmoothCall, waitMicros: number, nowMs: number): void {
    call.waitMicros = waitMicros;
    if (!waits(call)) return this.settle(call, undefined, waitMicros / 1000);
    const wakeAtMs = nowMs + waitMicros / 1000;
    if (wakeAtMs > call.deadlineMs) return this.giveUp(call.seq, waitTimeout(`${this.what}.acquire`, undefined));
    if (wakeAtMs <= nowMs && this.line.empty) return this.settle(call, undefined, resultOf(call));
    this.line.push(call, wakeAtMs);
  }

  private refused(call: SmoothCall): void {
    if (call.kind === 'acquire') this.settle(call, waitTimeout(`${this.what}.acquire`, undefined));
    else this.settle(call, undefined, false);
  }

  private failed(batch: readonly SmoothCall[], error: Error): void {
    const nowMs = this.s.clock.now();
    for (const call of batch) {
      if (call.settled || call.kind === 'release') continue;
      if (call.kind === 'setRate' || call.kind === 'getRate' || refusedByScript(error)) {
        this.failure.rejected(error);
        this.settle(call, error);
        continue;
      }
      try {
        const waitMicros = this.failure.waitMicrosFor(call, error);
        if (waitMicros === false) this.refused(call);
        else this.granted(call, waitMicros, nowMs);
      } catch (thrown) {
        this.settle(call, asError(thrown));
      }
    }
    this.rearm();
  }

  /** A script cut off at its deadline ran after all: the reservations it made for callers already answered are released when safe. */
  private lateReply(batch: readonly SmoothCall[], reply: unknown): void {
    const answers = smoothAnswersOf(reply, batch.length);
    if (answers === undefined) return;
    batch.forEach((call, i) => {
      const a = answers[i]!;
      if (a.done && call.kind !== 'release' && call.kind !== 'setRate' && call.kind !== 'getRate')
        this.releaseQuietly({ version: a.version });
    });
  }

  private releaseQuietly(booking: Booking): void {
    this.enqueue('release', {
      permits: 1,
      timeout: undefined,
      rate: NaN,
      deadlineMs: Infinity,
      release: booking,
    }).catch(() => undefined);
  }

  /** The caller of `seq` gives up with `error`; a reservation it holds is released when that is safe. */
  private giveUp(seq: number, error: Error): void {
    const call = this.live.get(seq);
    if (call === undefined || call.settled) return;
    this.settle(call, error);
    if (call.booking !== undefined) this.releaseQuietly(call.booking);
    this.rearm();
  }

  /** Lets due callers go and gives up on callers past their deadlines; runs when the alarm rings. */
  private ring(): void {
    const nowMs = this.s.clock.now();
    for (const call of this.line.takeDue(nowMs)) this.settle(call, undefined, resultOf(call));
    while (this.deadlines.minTimeMs() <= nowMs) {
      this.giveUp(this.deadlines.pop(), waitTimeout(`${this.what}.acquire`, undefined));
    }
    this.rearm();
  }

  private rearm(): void {
    while (this.deadlines.size > 0 && !this.live.has(this.deadlines.minSeq())) this.deadlines.pop();
    this.alarm.setAt(Math.min(this.line.nextWakeAtMs(), this.deadlines.minTimeMs()));
  }

  private settle(call: SmoothCall, error: Error | undefined, value?: unknown): void {
    if (call.settled) return;
    call.settled = true;
    this.live.delete(call.seq);
    this.hooks.remove(call.seq);
    if (error !== undefined) call.reject(error);
    else call.resolve(value);
  }
}

/**
 * refusedByScript returns whether `error` is the script's own refusal (a state made under another
 * model or parameters, a bad argument): a mistake to fix, which no failure policy should hide.
 */
function refusedByScript(error: Error): boolean {
  if (!(error instanceof FloodgateError)) return true;
  const cause = error.cause;
  return cause instanceof Error && cause.message.startsWith('FLOODGATE');
}

/** What a waiting call resolves to once due: acquire the seconds its reservation waited, tryAcquire true. */
function resultOf(call: SmoothCall): number | boolean {
  return call.kind === 'acquire' ? call.waitMicros / MICROS_PER_SECOND : true;
}

function timeoutOf(timeoutMs: unknown): bigint {
  return timeoutMicrosFrom(timeoutMs, 'timeoutMs', 1000);
}
