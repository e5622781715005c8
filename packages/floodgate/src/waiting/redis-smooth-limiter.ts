import { checkPermits, timeoutMicrosFrom } from '../core/smooth/smooth-arguments.js';
import { aborted } from './errors.js';
import {
  burstySettings,
  checkFleetRate,
  warmingUpSettings,
  type RedisSmoothBurstyOptions,
  type RedisSmoothWarmingUpOptions,
  type SmoothSettings,
} from './redis-smooth-options.js';
import type { SmoothCallKind } from './smooth-call.js';
import { SmoothLine } from './smooth-line.js';
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

/**
 * RedisSmoothLimiter is Guava's RateLimiter shared by every process on a Redis or Redis Cluster:
 * the fleet as a whole hands out permits at the rate, as one Guava limiter would. Each reservation
 * is one atomic script on one key (the name is its hash tag), on the server's `TIME`, keeping
 * Guava's stored permits and next-free moment: the first request never waits, a big request pays
 * later (the next caller waits for it), idle time stores permits (free in a
 * {@link RedisSmoothLimiter.bursty | bursty} limiter, at a falling cost in a
 * {@link RedisSmoothLimiter.warmingUp | warming-up} one), and `setRate` keeps the state as Guava's
 * does. The script restates the rules of the in-process {@link index!SmoothRateLimiter}, and tests check
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
 * A reservation that Redis made after its call was cut off is released when that is safe. The
 * store's observer hears `storeCall` per script, `storeError` and `fallback` from the failure
 * policy, and `queue` with the depth of this process's line (named after the limiter).
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
  private readonly line: SmoothLine;

  private constructor(private readonly s: SmoothSettings) {
    this.line = new SmoothLine(s, this.what);
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
    return this.line.waiting;
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
      return this.line.submit('setRate', { permits: 1, timeout: undefined, rate, deadlineMs: Infinity });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** getRate resolves to the fleet's rate in permits per second (as Guava computes it back from the interval). */
  getRate(): Promise<number> {
    return this.line.submit('getRate', { permits: 1, timeout: undefined, rate: NaN, deadlineMs: Infinity });
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
      return this.line.submit<T>(kind, { permits, timeout: o.timeout, rate: NaN, deadlineMs, signal });
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

function timeoutOf(timeoutMs: unknown): bigint {
  return timeoutMicrosFrom(timeoutMs, 'timeoutMs', 1000);
}
