import { systemClock, type Clock } from '../clock.js';
import { requireObject } from '../validate.js';
import { longFromDouble } from './java-long.js';
import type { PermitStorage, SmoothState } from './permit-storage.js';
import {
  checkClock,
  checkColdFactor,
  checkMaxBurstSeconds,
  checkPermits,
  checkRate,
  checkSleep,
  checkWarmupMs,
  nowMicrosFrom,
  timeoutMicrosFrom,
} from './smooth-arguments.js';
import { storageOf, type SmoothModel } from './smooth-model.js';
import { FRESH_SMOOTH_STATE, reserveAt, setRateAt, tryReserveAt } from './smooth-state.js';
import { timerSleep, type SleepMs } from './sleep.js';

/** SmoothLimiterOptions holds the options both kinds of {@link SmoothRateLimiter} take. */
export interface SmoothLimiterOptions {
  /** Where "now" comes from; default {@link systemClock}. Read in ms, used in whole µs. */
  clock?: Clock;
  /**
   * Waits the given milliseconds; default `setTimeout`, in steps for waits past 2^31 - 1 ms. Called
   * once per granted acquire, with 0 when there is nothing to wait. Tests pass one that advances a
   * ManualClock.
   */
  sleep?: SleepMs;
}

/** SmoothBurstyOptions configures {@link SmoothRateLimiter.bursty}. */
export interface SmoothBurstyOptions extends SmoothLimiterOptions {
  /** How many seconds' worth of unused permits may be stored for a burst; default 1 (Guava's `create`). */
  maxBurstSeconds?: number;
}

/** SmoothWarmingUpOptions configures {@link SmoothRateLimiter.warmingUp}. */
export interface SmoothWarmingUpOptions extends SmoothLimiterOptions {
  /** How many times the stable interval a permit costs when fully cold; default 3, at least 1. */
  coldFactor?: number;
}

const MICROS_PER_SECOND = 1e6;

/**
 * clockMicros returns the clock's time in whole microseconds, floored, except that a product a
 * rounding error away from a whole µs (a ManualClock at 0.001 ms reads 0.9999… µs) counts as it.
 */
export function clockMicros(clock: Clock): number {
  const micros = clock.now() * 1000;
  const nearest = Math.round(micros);
  return Math.abs(micros - nearest) <= Math.abs(micros) * 2 ** -50 ? nearest : Math.floor(micros);
}

/**
 * SmoothRateLimiter is Guava's RateLimiter: it hands out permits at a steady rate, making each
 * caller wait for the permits the previous callers took (so the first request never waits and a
 * big request delays the next one, not itself). Idle time stores permits: for free in a
 * {@link SmoothRateLimiter.bursty | bursty} limiter, at a falling cost in a
 * {@link SmoothRateLimiter.warmingUp | warming-up} one. Waits match Guava to the microsecond.
 *
 * Each method that reads the clock has a synchronous twin taking `nowMicros` (whole microseconds
 * on the same timeline as the `clock` option): {@link reserveAt}, {@link tryReserveAt},
 * {@link setRateAt}. A clock that goes back never creates permits; waits are measured from the
 * next-free moment, which stays where it was (it is the latest time the limiter has recorded and
 * only moves forward), so a clock stepping back admits nothing extra: its callers wait up to the
 * step longer. This is Guava's own rule (`resync` only moves forward), unchanged. A clock stepping
 * forward by s stores s worth of permits early (at most `maxPermits`), as Guava does.
 *
 * @example
 * const limiter = SmoothRateLimiter.bursty(5);        // 5 permits per second
 * for (const task of tasks) {
 *   await limiter.acquire();                          // waits about 200 ms between tasks
 *   void run(task);
 * }
 * if (await limiter.tryAcquire(1, 50)) run(urgent);   // only if a permit is free within 50 ms
 */
export class SmoothRateLimiter {
  /** Guava's four fields; the rules that change them are in smooth-state.ts, shared with the Redis limiter's Lua. */
  private state: SmoothState = FRESH_SMOOTH_STATE;
  private readonly storage: PermitStorage;

  private constructor(
    model: SmoothModel,
    permitsPerSecond: number,
    private readonly clock: Clock,
    private readonly sleep: SleepMs,
  ) {
    this.storage = storageOf(model);
    this.setRateAt(permitsPerSecond, clockMicros(clock));
  }

  /**
   * bursty returns a limiter that stores up to `maxBurstSeconds` (default 1) seconds of unused
   * permits and hands them out without waiting, like Guava's `RateLimiter.create(permitsPerSecond)`.
   * It starts with nothing stored. `permitsPerSecond` must be above 0 (Infinity: never waits; a
   * rate so small its interval overflows lets exactly one request through).
   */
  static bursty(permitsPerSecond: number, options: SmoothBurstyOptions = {}): SmoothRateLimiter {
    const {
      maxBurstSeconds = 1,
      clock = systemClock,
      sleep = timerSleep,
    } = requireObject<SmoothBurstyOptions>(options, 'SmoothRateLimiter.options');
    const model: SmoothModel = { kind: 'bursty', maxBurstSeconds: checkMaxBurstSeconds(maxBurstSeconds) };
    return new SmoothRateLimiter(model, checkRate(permitsPerSecond), checkClock(clock), checkSleep(sleep));
  }

  /**
   * warmingUp returns a limiter that starts cold and speeds up to `permitsPerSecond` over
   * `warmupMs` of saturating demand, cooling down again when idle, like Guava's
   * `RateLimiter.create(permitsPerSecond, warmupPeriod)`. A fully cold permit costs `coldFactor`
   * (default 3) stable intervals. `warmupMs` is truncated to whole µs and must be at least 1 µs:
   * Guava accepts less and then stops limiting (its issue #2730); for no warm-up use {@link bursty}.
   */
  static warmingUp(
    permitsPerSecond: number,
    warmupMs: number,
    options: SmoothWarmingUpOptions = {},
  ): SmoothRateLimiter {
    const {
      coldFactor = 3,
      clock = systemClock,
      sleep = timerSleep,
    } = requireObject<SmoothWarmingUpOptions>(options, 'SmoothRateLimiter.options');
    const rate = checkRate(permitsPerSecond);
    const warmupMicros = Number(longFromDouble(checkWarmupMs(warmupMs) * 1000));
    const model: SmoothModel = { kind: 'warmingUp', warmupMicros, coldFactor: checkColdFactor(coldFactor) };
    return new SmoothRateLimiter(model, rate, checkClock(clock), checkSleep(sleep));
  }

  /**
   * acquire returns the seconds it waited (0 if none) after reserving `permits` (a whole number,
   * default 1) and sleeping until the reservation starts. It always succeeds; a big request
   * is granted at once if nothing is owed, and its cost delays later requests.
   */
  async acquire(permits = 1): Promise<number> {
    const waitMicros = this.reserveAt(permits, clockMicros(this.clock));
    await this.sleep(waitMicros / 1000);
    return waitMicros / MICROS_PER_SECOND;
  }

  /**
   * tryAcquire returns true after reserving `permits` (default 1) and sleeping, when they can be
   * granted within `timeoutMs` (default 0: only if free now; negative counts as 0, Infinity waits
   * as long as needed), and false at once, reserving nothing, otherwise.
   */
  async tryAcquire(permits = 1, timeoutMs = 0): Promise<boolean> {
    checkPermits(permits);
    const timeout = timeoutMicrosFrom(timeoutMs, 'timeoutMs', 1000);
    const waitMicros = this.tryReserve(permits, timeout, nowMicrosFrom(clockMicros(this.clock)));
    if (waitMicros === false) return false;
    await this.sleep(waitMicros / 1000);
    return true;
  }

  /**
   * reserveAt returns the microseconds to wait from `nowMicros` before using `permits`, having
   * reserved them; it never refuses. Synchronous twin of {@link acquire}.
   */
  reserveAt(permits: number, nowMicros: number): number {
    checkPermits(permits);
    return Number(this.reserve(permits, nowMicrosFrom(nowMicros)));
  }

  /**
   * tryReserveAt returns the microseconds to wait from `nowMicros`, having reserved `permits`, when
   * that wait would be at most `timeoutMicros` (truncated; negative counts as 0); otherwise it
   * returns false and reserves nothing. Like Guava, it judges by the next-free moment alone, so a
   * request the stored permits would cover still fails if an earlier request's cost is unpaid.
   * Synchronous twin of {@link tryAcquire}.
   */
  tryReserveAt(permits: number, timeoutMicros: number, nowMicros: number): number | false {
    checkPermits(permits);
    const timeout = timeoutMicrosFrom(timeoutMicros, 'timeoutMicros', 1);
    return this.tryReserve(permits, timeout, nowMicrosFrom(nowMicros));
  }

  /**
   * setRate changes the stable rate from now on, keeping the share of stored permits (the new
   * maximum times stored / old maximum). Waits already handed out are not changed, so the next
   * request still waits for what the last one reserved at the old rate.
   */
  setRate(permitsPerSecond: number): void {
    this.setRateAt(permitsPerSecond, clockMicros(this.clock));
  }

  /** setRateAt is {@link setRate} at `nowMicros`, the synchronous twin. */
  setRateAt(permitsPerSecond: number, nowMicros: number): void {
    this.state = setRateAt(this.storage, this.state, checkRate(permitsPerSecond), nowMicrosFrom(nowMicros));
  }

  /**
   * getRate returns the stable rate in permits per second, as Guava computes it back from the
   * interval (1e6 / (1e6 / rate), so it may differ in the last bit; Number.MIN_VALUE reads 0).
   */
  getRate(): number {
    return MICROS_PER_SECOND / this.state.stableIntervalMicros;
  }

  /** Reserves and returns the µs to wait, or false when the next-free moment is beyond `now + timeout`. */
  private tryReserve(permits: number, timeout: bigint, now: bigint): number | false {
    const reservation = tryReserveAt(this.storage, this.state, permits, timeout, now);
    if (reservation === undefined) return false;
    this.state = reservation.state;
    return Number(reservation.waitMicros);
  }

  /** Reserves `permits` at `now` and returns the µs to wait (see {@link reserveAt}). */
  private reserve(permits: number, now: bigint): bigint {
    const reservation = reserveAt(this.storage, this.state, permits, now);
    this.state = reservation.state;
    return reservation.waitMicros;
  }
}
