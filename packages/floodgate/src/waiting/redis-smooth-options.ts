import type { Clock } from '../core/clock.js';
import type { Observer } from '../core/events.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { longFromDouble } from '../core/smooth/java-long.js';
import { checkColdFactor, checkMaxBurstSeconds, checkWarmupMs } from '../core/smooth/smooth-arguments.js';
import type { SmoothModel } from '../core/smooth/smooth-model.js';
import type { Timers } from '../core/timers.js';
import { requireObject } from '../core/validate.js';
import { checkOnError, type OnError } from '../stores/redis/failure-policy.js';
import type { RedisStore, StoreShares } from '../stores/redis/redis-store.js';
import type { ScriptRunner } from '../stores/redis/runner.js';

/** RedisSmoothOptions are the options both kinds of {@link RedisSmoothLimiter} take. */
export interface RedisSmoothOptions {
  /** The store whose Redis holds the limiter, and whose timeout, circuits, clock and timers it uses. */
  store: RedisStore;
  /** The limiter's name: every process using the same name (and store prefix) shares one limiter. */
  name: string;
  /**
   * The rate the fleet's limiter is created with, in permits per second (above 0, finite), by
   * whichever process calls first. A limiter that exists keeps its rate: change it with `setRate`.
   */
  permitsPerSecond: number;
  /**
   * What a call does when Redis fails or does not answer within the store's timeout (default: the
   * store's `onError`). `{ fallback: 'local' }`: a limiter in this process at its share of the rate;
   * `'fail-open'`: no wait (tryAcquire true); `'fail-closed'`: tryAcquire false, acquire and reserve
   * reject; `'throw'`: every call rejects with `STORE_ERROR` or `STORE_TIMEOUT`.
   */
  onError?: OnError;
  /**
   * How long a call whose script was cut off by the store's timeout waits for Redis's late answer
   * before `onError` decides it, in ms (default 1000; 0: `onError` decides at the store's timeout).
   * Redis may still have run the script: a late answer is honoured as if it came in time, so the
   * caller waits its turn on the fleet's schedule instead of going at once. A call whose connection
   * fails meanwhile, or whose answer never comes, is decided by `onError` when this passes.
   */
  lateAnswerMs?: number;
  /**
   * How long the limiter's key outlives its next-free moment without a call, in ms (default
   * Infinity: kept). When it expires, the next call creates the limiter anew, as `create` would.
   */
  idleTtlMs?: number;
}

/** RedisSmoothBurstyOptions configures {@link RedisSmoothLimiter.bursty}. */
export interface RedisSmoothBurstyOptions extends RedisSmoothOptions {
  /** How many seconds' worth of unused permits may be stored for a burst; default 1 (Guava's `create`). */
  maxBurstSeconds?: number;
}

/** RedisSmoothWarmingUpOptions configures {@link RedisSmoothLimiter.warmingUp}. */
export interface RedisSmoothWarmingUpOptions extends RedisSmoothOptions {
  /** How long saturating demand takes to warm a cold limiter up to its rate, in ms (at least 0.001, whole µs). */
  warmupMs: number;
  /** How many times the stable interval a permit costs when fully cold; default 3, at least 1. */
  coldFactor?: number;
}

/** SmoothSettings are a RedisSmoothLimiter's checked options, with defaults filled in. */
export interface SmoothSettings {
  readonly model: SmoothModel;
  /** The model's arguments to the script (ARGV[2..4]). */
  readonly modelArgs: readonly string[];
  readonly key: string;
  readonly name: string;
  readonly permitsPerSecond: number;
  readonly onError: OnError;
  /** How long a call cut off by the store's timeout waits for its late answer, in ms. */
  readonly lateAnswerMs: number;
  /** ARGV[6]: '' to keep the key, else the ms it outlives its next-free moment. */
  readonly ttlArg: string;
  readonly runner: ScriptRunner;
  readonly testTime: boolean;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly share: () => number;
  /** The store's observer: hears `storeError` and `fallback` from the limiter's failure policy. */
  readonly observer: Observer | undefined;
}

const MAX_NAME_LENGTH = 1024;
const OWNER = 'RedisSmoothLimiter';

/** burstySettings checks the options of a bursty limiter, throwing `INVALID_OPTION` naming the first bad one. */
export function burstySettings(options: RedisSmoothBurstyOptions): SmoothSettings {
  const o = requireObject<RedisSmoothBurstyOptions>(options, OWNER);
  const maxBurstSeconds = checkMaxBurstSeconds(o.maxBurstSeconds ?? 1);
  return settingsOf(o, { kind: 'bursty', maxBurstSeconds }, [String(maxBurstSeconds), '0']);
}

/** warmingUpSettings checks the options of a warming-up limiter, throwing `INVALID_OPTION` naming the first bad one. */
export function warmingUpSettings(options: RedisSmoothWarmingUpOptions): SmoothSettings {
  const o = requireObject<RedisSmoothWarmingUpOptions>(options, OWNER);
  const warmupMicros = Number(longFromDouble(checkWarmupMs(o.warmupMs) * 1000));
  const coldFactor = checkColdFactor(o.coldFactor ?? 3);
  return settingsOf(o, { kind: 'warmingUp', warmupMicros, coldFactor }, [String(warmupMicros), String(coldFactor)]);
}

function settingsOf(o: RedisSmoothOptions, model: SmoothModel, params: readonly string[]): SmoothSettings {
  const store = o.store as Partial<RedisStore> | null;
  if (typeof store !== 'object' || store === null || typeof store.shares !== 'function')
    throw invalid('store', 'a RedisStore', o.store);
  const shares: StoreShares = store.shares();
  const name = checkName(o.name);
  const onError = o.onError === undefined ? shares.onError : checkOnError(o.onError, `${OWNER}.onError`);
  if (typeof onError === 'object' && onError.share === undefined && onError.nodes === undefined) shares.censusNeeded();
  return {
    model,
    modelArgs: [model.kind, ...params],
    key: `${shares.prefix}smooth:{${name}}`,
    name,
    permitsPerSecond: checkFleetRate(o.permitsPerSecond, 'permitsPerSecond'),
    onError,
    lateAnswerMs: lateAnswerMsOf(o.lateAnswerMs),
    ttlArg: ttlArgOf(o.idleTtlMs),
    runner: shares.runner,
    testTime: shares.testTime,
    clock: shares.clock,
    timers: shares.timers,
    observer: shares.observer,
    share: () =>
      typeof onError !== 'object' ? 1 : (onError.share ?? 1 / (onError.nodes ?? Math.max(1, shares.nodes()))),
  };
}

/** checkFleetRate returns `value` when it is a rate the Redis limiter takes: above 0 and finite. */
export function checkFleetRate(value: unknown, name: string): number {
  if (typeof value !== 'number' || !(value > 0) || value === Infinity) {
    throw invalid(name, 'a finite number of permits per second above 0', value);
  }
  return value;
}

/** How long a cut-off call waits for its late answer by default: well past any latency the store's timeout follows (its cap is 250 ms). */
const DEFAULT_LATE_ANSWER_MS = 1000;

function lateAnswerMsOf(value: unknown): number {
  if (value === undefined) return DEFAULT_LATE_ANSWER_MS;
  if (typeof value !== 'number' || !(value >= 0)) {
    throw invalid('lateAnswerMs', 'a number of ms of at least 0, or Infinity', value);
  }
  return value;
}

function ttlArgOf(value: unknown): string {
  if (value === undefined || value === Infinity) return '';
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalid('idleTtlMs', 'a whole number of ms of at least 1, or Infinity (kept)', value);
  }
  return String(value);
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw invalid('name', `a string of 1 to ${MAX_NAME_LENGTH} characters`, name);
  }
  return name;
}

function invalid(option: string, rule: string, value: unknown): FloodgateError {
  const where = `${OWNER}.${option}`;
  return new FloodgateError('INVALID_OPTION', `${where} must be ${rule}, got ${describeValue(value)}`, where);
}
