/**
 * A request's way through its route's overload guards: every circuit first (an open one refuses
 * before any slot is taken), then every concurrency limit, the route's before its upstream's. What
 * it holds is a {@link Passage}, settled exactly once with how the upstream answered.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { CallOutcome, CircuitBreakerCall, ConcurrencyLimiter, ConcurrencyPermit } from 'floodgate';
import type { Admission } from './decide.js';
import { refusalHeaders, type Guard, type GuardStep, type RefusalReason } from './guards.js';
import type { UpstreamResult } from './proxy.js';

/** ShedReporter counts each request a guard refused. */
export interface ShedReporter {
  shed(scope: string, tier: string, reason: RefusalReason): void;
}

/** EnterOptions carries what {@link enter} needs besides the request. */
export interface EnterOptions {
  readonly reporter: ShedReporter;
  /** Fires when the client goes away, to stop waiting for a slot; needed only when a guard waits. */
  readonly signal: AbortSignal | undefined;
  /** Whether the connection's peer is a trusted proxy (`trustProxy`), whose priority header a `headerFrom: trusted-proxies` guard believes. */
  readonly peerTrusted?: boolean;
}

/** An error that came back slower than this many times the upstream's baseline latency is taken as overload. */
const SLOW_ERROR_FACTOR = 2;

/** Passage is what a request holds while forwarded: its permits and circuit calls, given back once by {@link settle} or {@link abandon}. */
export class Passage {
  private readonly permits: ConcurrencyPermit[] = [];
  private readonly limiters: ConcurrencyLimiter[] = [];
  private readonly calls: CircuitBreakerCall[] = [];
  private open = true;

  /** settle releases every permit with the outcome `result` says and records it in every circuit; once. */
  settle(result: UpstreamResult): void {
    if (!this.open) return;
    this.open = false;
    for (let i = 0; i < this.permits.length; i++) this.permits[i]!.release(outcomeOf(result, this.limiters[i]!));
    const health = healthOf(result);
    for (const call of this.calls) {
      if (health === 'ok') call.succeeded();
      else if (health === 'failed') call.failed();
      else call.abandon();
    }
  }

  /** abandon releases every permit as `ignore` and abandons every circuit call: nothing was learned. */
  abandon(): void {
    if (!this.open) return;
    this.open = false;
    for (const permit of this.permits) permit.release('ignore');
    for (const call of this.calls) call.abandon();
  }

  /** Used by {@link enter} only. */
  hold(permit: ConcurrencyPermit, limiter: ConcurrencyLimiter): void {
    this.permits.push(permit);
    this.limiters.push(limiter);
  }

  /** Used by {@link enter} only. */
  call(call: CircuitBreakerCall): void {
    this.calls.push(call);
  }
}

/**
 * enter returns the passage of a request through `steps`, or the refusal to answer it with (the
 * shed status or 503, problem+json, Retry-After); at once when no limiter makes it wait, else a
 * promise. Nothing is held by a refused request. It never rejects.
 *
 * An open circuit refuses before any slot is taken; a circuit's call is taken after the slots, so
 * the duration it records is the upstream's, not the wait for a slot.
 */
export function enter(
  steps: readonly GuardStep[],
  headers: IncomingHttpHeaders,
  options: EnterOptions,
): Passage | Admission | Promise<Passage | Admission> {
  for (const step of steps) {
    const breaker = step.guard.breaker;
    if (breaker === undefined) continue;
    const retryInMs = breaker.retryInMs();
    if (retryInMs > 0)
      return refuse(step.guard, tierOf(step, headers, options), 'circuit-open', retryInMs, options.reporter);
  }
  return acquireFrom(steps, 0, new Passage(), headers, options);
}

function acquireFrom(
  steps: readonly GuardStep[],
  first: number,
  passage: Passage,
  headers: IncomingHttpHeaders,
  options: EnterOptions,
): Passage | Admission | Promise<Passage | Admission> {
  for (let i = first; i < steps.length; i++) {
    const step = steps[i]!;
    const { guard } = step;
    const limiter = guard.limiter;
    if (limiter === undefined) continue;
    const tier = tierOf(step, headers, options);
    const signal = guard.waits ? options.signal : undefined;
    const admission = limiter.acquire(signal === undefined ? guard.acquireOptions[tier] : { tier, signal });
    if (admission instanceof Promise) {
      return admission.then((waited) => {
        if (!waited.allowed) return shed(passage, guard, tier, waited.reason, waited.retryAfterMs, options);
        passage.hold(waited, limiter);
        return acquireFrom(steps, i + 1, passage, headers, options);
      });
    }
    if (!admission.allowed) return shed(passage, guard, tier, admission.reason, admission.retryAfterMs, options);
    passage.hold(admission, limiter);
  }
  return callCircuits(steps, passage, headers, options);
}

/** Takes a call of every circuit; one that opened while the request waited for a slot refuses it, and the slots go back. */
function callCircuits(
  steps: readonly GuardStep[],
  passage: Passage,
  headers: IncomingHttpHeaders,
  options: EnterOptions,
): Passage | Admission {
  for (const step of steps) {
    const breaker = step.guard.breaker;
    if (breaker === undefined) continue;
    const call = breaker.tryAcquire();
    if (call === undefined)
      return shed(passage, step.guard, tierOf(step, headers, options), 'circuit-open', breaker.retryInMs(), options);
    passage.call(call);
  }
  return passage;
}

function shed(
  passage: Passage,
  guard: Guard,
  tier: number,
  reason: RefusalReason,
  retryAfterMs: number,
  options: EnterOptions,
): Admission {
  passage.abandon();
  return refuse(guard, tier, reason, retryAfterMs, options.reporter);
}

function refuse(
  guard: Guard,
  tier: number,
  reason: RefusalReason,
  retryAfterMs: number,
  reporter: ShedReporter,
): Admission {
  reporter.shed(guard.scope, guard.tiers[tier]!, reason);
  const status = reason === 'circuit-open' ? 503 : guard.shedStatus;
  return { allowed: false, status, headers: refusalHeaders(retryAfterMs), body: guard.bodies[reason] };
}

function tierOf(step: GuardStep, headers: IncomingHttpHeaders, options: EnterOptions): number {
  if (step.fixedTier !== undefined) return step.fixedTier;
  const { guard } = step;
  if (guard.header === undefined || (guard.headerFromTrustedOnly && options.peerTrusted !== true))
    return guard.defaultTier;
  return guard.tierOf(headers[guard.header]);
}

/**
 * outcomeOf returns what a forwarded request says of the upstream's load: `drop` for a timeout, a
 * refused connection, or the upstream's own 503 or 429; `ignore` for a client that left, a body
 * too large, and other errors that came back fast; `drop` for those that came back slow (more than
 * twice the learned baseline); `success` for any other answer.
 */
export function outcomeOf(result: UpstreamResult, limiter: ConcurrencyLimiter): CallOutcome {
  switch (result.failure) {
    case 'timeout':
    case 'connect':
      return 'drop';
    case 'aborted':
    case 'too-large':
      return 'ignore';
    case 'other':
      return slowError(result, limiter) ? 'drop' : 'ignore';
    case undefined:
      if (result.status === 503 || result.status === 429) return 'drop';
      if (result.status >= 500) return slowError(result, limiter) ? 'drop' : 'ignore';
      return 'success';
  }
}

function slowError(result: UpstreamResult, limiter: ConcurrencyLimiter): boolean {
  const baselineMs = limiter.snapshot().adaptive?.baselineRttMs;
  return baselineMs !== undefined && result.durationMs > SLOW_ERROR_FACTOR * baselineMs;
}

/** What a forwarded request says of the upstream's health: a 5xx or a failure to answer is a failure; a client that left says nothing. */
function healthOf(result: UpstreamResult): 'ok' | 'failed' | 'unknown' {
  if (result.failure === 'aborted' || result.failure === 'too-large') return 'unknown';
  return result.failure !== undefined || result.status >= 500 ? 'failed' : 'ok';
}
