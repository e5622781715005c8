/** The options of a `CircuitBreaker`, their defaults, and the checks that name what is wrong. */
import { monotonicClock, type Clock } from '../clock.js';
import { FloodgateError, describeValue } from '../errors.js';
import { durationMs, positiveInteger, positiveNumber, requireObject } from '../validate.js';
import type { CircuitBreakerEvent } from './circuit-breaker-events.js';

/**
 * CircuitBreakerTrigger is what opens a closed `CircuitBreaker`, checked after each call:
 *
 * - `slowCallRatio`: at least `ratio` (above 0, at most 1) of the calls in the window took more
 *   than `slowCallMs` (a call of exactly `slowCallMs` is not slow), failed or not: a fast error
 *   is not slow (pair it with another breaker on `errorRatio` to catch those).
 * - `errorRatio`: at least `ratio` of the calls in the window failed.
 * - `errorCount`: at least `count` calls in the window failed.
 * - `consecutiveFailures`: the last `count` calls failed, whatever the window (`minCalls` does
 *   not apply). It follows every answer, even those of calls sent before the circuit opened
 *   that end while it is open: a success closes it (the streak is broken), a failure restarts
 *   `openMs` (the streak goes on). This is the Redis store's circuit.
 *
 * The ratio and count triggers need `minCalls` calls in the window first (Sentinel's
 * `minRequestAmount`). They open *at* the threshold (Sentinel opens only above it): a `count` of
 * 3 opens on the third failure, a `ratio` of 0.5 on the call that makes half of them fail.
 */
export type CircuitBreakerTrigger =
  | { readonly type: 'slowCallRatio'; readonly slowCallMs: number; readonly ratio: number }
  | { readonly type: 'errorRatio'; readonly ratio: number }
  | { readonly type: 'errorCount'; readonly count: number }
  | { readonly type: 'consecutiveFailures'; readonly count: number };

/** CircuitBreakerOptions configures a `CircuitBreaker`; only `trigger` is required. */
export interface CircuitBreakerOptions {
  /** What opens the circuit: see {@link CircuitBreakerTrigger}. */
  readonly trigger: CircuitBreakerTrigger;
  /** How far back the ratio and count triggers look, in whole ms (default 10_000). */
  readonly windowMs?: number;
  /** How many buckets the window is kept in (default 10); they must split `windowMs` into whole ms. */
  readonly buckets?: number;
  /** Fewest calls in the window before a ratio or count trigger may open the circuit (default 5; 0 or 1: no minimum). */
  readonly minCalls?: number;
  /** How long the circuit stays open before it lets a probe through, in ms (default 5_000). */
  readonly openMs?: number;
  /** How many probes half-open lets through (default 1); all of them must succeed to close it. */
  readonly halfOpenProbes?: number;
  /** How long a probe may take before it counts as failed, in ms (default `Infinity`: never). */
  readonly probeTimeoutMs?: number;
  /** Where "now" comes from (default {@link monotonicClock}; a `ManualClock` in tests). */
  readonly clock?: Clock;
  /** What the circuit guards, as its events name it (default `'circuit'`). */
  readonly name?: string;
  /** Hears each change of state, synchronously, once the change is made. */
  readonly onStateChange?: (event: CircuitBreakerEvent) => void;
}

/** The options with every default applied and every value checked. */
export interface CircuitBreakerSettings {
  readonly trigger: CircuitBreakerTrigger;
  readonly windowMs: number;
  readonly buckets: number;
  readonly minCalls: number;
  readonly openMs: number;
  readonly halfOpenProbes: number;
  readonly probeTimeoutMs: number;
  readonly clock: Clock;
  readonly name: string;
  readonly onStateChange: ((event: CircuitBreakerEvent) => void) | undefined;
}

const OPTIONS: ReadonlySet<string> = new Set([
  'trigger',
  'windowMs',
  'buckets',
  'minCalls',
  'openMs',
  'halfOpenProbes',
  'probeTimeoutMs',
  'clock',
  'name',
  'onStateChange',
]);

/** Each trigger's options besides `type`. */
const TRIGGER_OPTIONS: Readonly<Record<CircuitBreakerTrigger['type'], readonly string[]>> = {
  slowCallRatio: ['slowCallMs', 'ratio'],
  errorRatio: ['ratio'],
  errorCount: ['count'],
  consecutiveFailures: ['count'],
};

const TRIGGERS =
  "{ type: 'slowCallRatio', slowCallMs, ratio }, { type: 'errorRatio', ratio }, { type: 'errorCount', count } or { type: 'consecutiveFailures', count }";

function invalid(option: string, message: string): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `CircuitBreaker.${option} ${message}`, `CircuitBreaker.${option}`);
}

/**
 * settingsOf returns the options of a `CircuitBreaker` with the defaults applied, or throws
 * an `INVALID_OPTION` {@link FloodgateError} whose `option` is the first bad one
 * (`CircuitBreaker.trigger.ratio`), saying what would be right.
 */
export function settingsOf(options: CircuitBreakerOptions): CircuitBreakerSettings {
  const o = requireObject<CircuitBreakerOptions>(options, 'CircuitBreaker.options');
  for (const key of Object.keys(o)) {
    if (!OPTIONS.has(key)) throw invalid(key, `is not an option; the options are ${[...OPTIONS].join(', ')}`);
  }
  const windowMs = durationMs(o.windowMs ?? 10_000, 'CircuitBreaker.windowMs');
  return {
    trigger: checkTrigger(o.trigger),
    windowMs,
    buckets: checkBuckets(o.buckets ?? 10, windowMs),
    minCalls: positiveInteger(o.minCalls ?? 5, 'CircuitBreaker.minCalls', 0),
    openMs: positiveNumber(o.openMs ?? 5_000, 'CircuitBreaker.openMs'),
    halfOpenProbes: positiveInteger(o.halfOpenProbes ?? 1, 'CircuitBreaker.halfOpenProbes'),
    probeTimeoutMs: checkProbeTimeoutMs(o.probeTimeoutMs ?? Infinity),
    clock: checkClock(o.clock ?? monotonicClock),
    name: checkName(o.name ?? 'circuit'),
    onStateChange: checkListener(o.onStateChange),
  };
}

function checkTrigger(trigger: unknown): CircuitBreakerTrigger {
  const t = trigger as { type?: unknown } | null | undefined;
  if (typeof t !== 'object' || t === null || typeof t.type !== 'string' || !Object.hasOwn(TRIGGER_OPTIONS, t.type)) {
    const got = typeof t === 'object' && t !== null ? `type ${describeValue(t.type)}` : describeValue(trigger);
    throw invalid('trigger', `must be one of ${TRIGGERS}, got ${got}`);
  }
  const type = t.type as CircuitBreakerTrigger['type'];
  const allowed = TRIGGER_OPTIONS[type];
  for (const key of Object.keys(t)) {
    if (key !== 'type' && !allowed.includes(key))
      throw invalid(`trigger.${key}`, `is not an option of the ${type} trigger; it takes ${allowed.join(' and ')}`);
  }
  const v = t as Record<string, unknown>;
  if (type === 'consecutiveFailures' || type === 'errorCount') {
    return { type, count: positiveInteger(v.count, 'CircuitBreaker.trigger.count') };
  }
  const ratio = checkRatio(v.ratio);
  if (type === 'errorRatio') return { type, ratio };
  return { type, slowCallMs: checkSlowCallMs(v.slowCallMs), ratio };
}

function checkRatio(ratio: unknown): number {
  if (typeof ratio !== 'number' || !(ratio > 0 && ratio <= 1)) {
    throw invalid(
      'trigger.ratio',
      `must be a share of the calls above 0 and at most 1 (0.5 opens when half of them fail), got ${describeValue(ratio)}`,
    );
  }
  return ratio;
}

function checkSlowCallMs(slowCallMs: unknown): number {
  if (typeof slowCallMs !== 'number' || !Number.isFinite(slowCallMs) || slowCallMs < 0) {
    throw invalid(
      'trigger.slowCallMs',
      `must be a finite number of ms, at least 0 (a call taking longer is slow), got ${describeValue(slowCallMs)}`,
    );
  }
  return slowCallMs;
}

function checkProbeTimeoutMs(probeTimeoutMs: unknown): number {
  if (typeof probeTimeoutMs !== 'number' || !(probeTimeoutMs > 0)) {
    throw invalid(
      'probeTimeoutMs',
      `must be a number of ms above 0, or Infinity for no timeout, got ${describeValue(probeTimeoutMs)}`,
    );
  }
  return probeTimeoutMs;
}

function checkBuckets(buckets: unknown, windowMs: number): number {
  const count = positiveInteger(buckets, 'CircuitBreaker.buckets');
  if (windowMs % count !== 0) {
    throw invalid(
      'buckets',
      `must split windowMs (${windowMs}) into buckets of whole ms: a divisor of ${windowMs} such as 10 for 1000, got ${count}`,
    );
  }
  return count;
}

function checkClock(clock: unknown): Clock {
  if (typeof clock !== 'object' || clock === null || typeof (clock as Partial<Clock>).now !== 'function') {
    throw invalid(
      'clock',
      `must have a now() method returning ms, like monotonicClock or a ManualClock, got ${describeValue(clock)}`,
    );
  }
  return clock as Clock;
}

function checkName(name: unknown): string {
  if (typeof name !== 'string')
    throw invalid('name', `must be a string naming what the circuit guards, got ${describeValue(name)}`);
  return name;
}

function checkListener(listener: unknown): CircuitBreakerSettings['onStateChange'] {
  if (listener !== undefined && typeof listener !== 'function') {
    throw invalid(
      'onStateChange',
      `must be a function taking a CircuitBreakerEvent, or undefined, got ${describeValue(listener)}`,
    );
  }
  return listener as CircuitBreakerSettings['onStateChange'];
}
