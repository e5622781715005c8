import { StoreTimeout, type StoreTimeoutOption } from '../core/store-timeout.js';
import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { isTimers, systemTimers, type Timers } from '../core/timers.js';
import { durationMs, positiveInteger, requireObject } from '../core/validate.js';
import { checkQueueBound } from './validate.js';
import type { RedisAdapter } from '../stores/redis/adapter.js';

/** RedisSemaphoreOptions configures a {@link RedisSemaphore}. */
export interface RedisSemaphoreOptions {
  /** The client, through {@link ioredisAdapter} or {@link nodeRedisAdapter}. */
  adapter: RedisAdapter;
  /** The semaphore's name: every process using the same name (and prefix) shares its permits. */
  name: string;
  /** Most permits held at once, across every process: a whole number of at least 1. */
  permits: number;
  /**
   * How long a permit stays held without a release or renew, in whole ms on the server's clock.
   * Then Redis reclaims it, so a holder that died cannot keep it. Set it well above the longest
   * legitimate hold, or renew long holds: a reclaimed permit's holder may still be running.
   */
  leaseMs: number;
  /** Most callers of this process waiting for a permit (default Infinity); see {@link RedisSemaphore.acquire}. */
  maxQueue?: number;
  /** How often waiters try again while no permit of this process is released, in whole ms (default 100). */
  pollMs?: number;
  /**
   * How long one call to Redis may take before it fails with `STORE_TIMEOUT`, in ms (default 1000),
   * or adaptive (`{ floorMs, p99Multiple, capMs }`). Not adaptive by default, unlike the stores: a
   * semaphore has no fallback, so a call cut off reaches its caller as an error, and a busy Redis
   * would turn into failed acquisitions.
   */
  timeoutMs?: StoreTimeoutOption;
  /** Start of the key (default `floodgate:`); no `{` or `}`: the key is `${prefix}semaphore:{${name}}`. */
  prefix?: string;
  /** Timers to wait on (default {@link systemTimers}); a ManualClock serves as the local clock too. */
  timers?: Timers;
}

/** SemaphoreSettings are a RedisSemaphore's checked options, with defaults filled in. */
export interface SemaphoreSettings {
  readonly adapter: RedisAdapter;
  readonly key: string;
  readonly name: string;
  readonly permits: number;
  readonly leaseMs: number;
  readonly maxQueue: number;
  readonly pollMs: number;
  readonly timeout: StoreTimeout;
  readonly timers: Timers;
  /** The local clock: only waits and polls read it, never the leases. */
  readonly clock: Clock;
}

const MAX_NAME_LENGTH = 1024;

/** settingsOf checks `options` and returns the settings, throwing `INVALID_OPTION` naming the first bad option. */
export function settingsOf(options: RedisSemaphoreOptions): SemaphoreSettings {
  const o = requireObject<RedisSemaphoreOptions>(options, 'RedisSemaphore');
  const name = checkName(o.name);
  const prefix = checkPrefix(o.prefix ?? 'floodgate:');
  const timers = o.timers ?? systemTimers;
  if (!isTimers(timers))
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisSemaphore.timers must have setTimer and clearTimer, got ${describeValue(timers)}`,
      'RedisSemaphore.timers',
    );
  return {
    adapter: checkAdapter(o.adapter),
    key: `${prefix}semaphore:{${name}}`,
    name,
    permits: positiveInteger(o.permits, 'RedisSemaphore.permits'),
    leaseMs: durationMs(o.leaseMs, 'RedisSemaphore.leaseMs'),
    maxQueue: checkQueueBound(o.maxQueue, 'RedisSemaphore.maxQueue', Infinity),
    pollMs: durationMs(o.pollMs ?? 100, 'RedisSemaphore.pollMs'),
    timeout: StoreTimeout.of(o.timeoutMs ?? 1000, 'RedisSemaphore.timeoutMs'),
    timers,
    clock: isClock(timers) ? timers : systemClock,
  };
}

function isClock(value: unknown): value is Clock {
  return typeof (value as Partial<Clock>).now === 'function';
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisSemaphore.name must be a string of 1 to ${MAX_NAME_LENGTH} characters, got ${describeValue(name)}`,
      'RedisSemaphore.name',
    );
  }
  return name;
}

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisSemaphore.prefix must be a string without { or } (the name is the hash tag), got ${describeValue(prefix)}`,
      'RedisSemaphore.prefix',
    );
  }
  return prefix;
}

function checkAdapter(adapter: unknown): RedisAdapter {
  const a = adapter as Partial<RedisAdapter> | null | undefined;
  if (
    typeof a !== 'object' ||
    a === null ||
    typeof a.evalsha !== 'function' ||
    typeof a.eval !== 'function' ||
    typeof a.cluster !== 'boolean'
  ) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisSemaphore.adapter must be a RedisAdapter, e.g. ioredisAdapter(new Redis()) or nodeRedisAdapter(client), got ${describeValue(adapter)}`,
      'RedisSemaphore.adapter',
    );
  }
  return a as RedisAdapter;
}
