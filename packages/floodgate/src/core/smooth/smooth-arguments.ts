import type { Clock } from '../clock.js';
import { FloodgateError, describeValue } from '../errors.js';
import { positiveInteger } from '../validate.js';
import { longFromDouble } from './java-long.js';
import type { SleepMs } from './sleep.js';

/** The name every smooth-limiter option and argument is reported under. */
const OWNER = 'SmoothRateLimiter';

function invalid(name: string, rule: string, value: unknown): FloodgateError {
  const option = `${OWNER}.${name}`;
  return new FloodgateError('INVALID_OPTION', `${option} must be ${rule}, got ${describeValue(value)}`, option);
}

/** checkRate returns `value` when it is a rate Guava accepts: above 0 and not NaN (Infinity allowed). */
export function checkRate(value: unknown): number {
  if (typeof value !== 'number' || !(value > 0)) {
    throw invalid('permitsPerSecond', 'a number of permits per second above 0 (Infinity allowed)', value);
  }
  return value;
}

/** checkPermits returns `value` when it is a whole number of permits, at least 1. */
export function checkPermits(value: unknown): number {
  return positiveInteger(value, `${OWNER}.permits`);
}

/**
 * checkWarmupMs returns `value` when it is a warm-up period of at least 1 µs (0.001 ms). Guava
 * accepts shorter ones, and its arithmetic then turns NaN and the limiter stops limiting (Guava
 * issue #2730); floodgate refuses them instead, pointing to the bursty limiter.
 */
export function checkWarmupMs(value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0.001)) {
    throw invalid(
      'warmupMs',
      'a number of milliseconds, at least 0.001 (1 µs; for no warm-up use SmoothRateLimiter.bursty)',
      value,
    );
  }
  return value;
}

/** checkMaxBurstSeconds returns `value` when it is a finite number of seconds, at least 0. */
export function checkMaxBurstSeconds(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid('maxBurstSeconds', 'a finite number of seconds, at least 0', value);
  }
  return value;
}

/** checkColdFactor returns `value` when it is a finite number of at least 1 (1 means no warm-up slope). */
export function checkColdFactor(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
    throw invalid('coldFactor', 'a finite number, at least 1', value);
  }
  return value;
}

/** checkClock returns `value` when it has a `now()` method. */
export function checkClock(value: unknown): Clock {
  if (typeof value !== 'object' || value === null || typeof (value as Clock).now !== 'function') {
    throw invalid('clock', 'an object with a now() method', value);
  }
  return value as Clock;
}

/** checkSleep returns `value` when it is a function. */
export function checkSleep(value: unknown): SleepMs {
  if (typeof value !== 'function') throw invalid('sleep', 'a function (ms) => Promise<void>', value);
  return value as SleepMs;
}

/**
 * timeoutMicrosFrom returns a timeout as a Java long of microseconds, at least 0: `value` times
 * `microsPerUnit`, truncated, saturated at the long range (Infinity waits forever), negative as 0.
 * NaN is refused.
 */
export function timeoutMicrosFrom(value: unknown, name: string, microsPerUnit: number): bigint {
  if (typeof value !== 'number' || Number.isNaN(value)) throw invalid(name, 'a number (negative counts as 0)', value);
  const micros = longFromDouble(value * microsPerUnit);
  return micros > 0n ? micros : 0n;
}

/** nowMicrosFrom returns a moment in whole microseconds (fractions floored) as a Java long; it must be finite. */
export function nowMicrosFrom(value: unknown): bigint {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw invalid('nowMicros', 'a finite number of microseconds', value);
  return longFromDouble(Math.floor(value));
}
