/** A circuit breaker: Sentinel's three triggers (slow calls, error ratio, error count) and N failures in a row. */
import { CallWindow } from './call-window.js';
import { AdmittedCall, type CallEnding, type CircuitBreakerCall } from './circuit-breaker-call.js';
import type { CircuitBreakerReason, CircuitBreakerState } from './circuit-breaker-events.js';
import { settingsOf, type CircuitBreakerOptions, type CircuitBreakerSettings } from './circuit-breaker-options.js';

export type { CircuitBreakerCall } from './circuit-breaker-call.js';
export type { CircuitBreakerEvent, CircuitBreakerReason, CircuitBreakerState } from './circuit-breaker-events.js';
export type { CircuitBreakerOptions, CircuitBreakerTrigger } from './circuit-breaker-options.js';

/** CircuitBreakerAdmission is what {@link CircuitBreaker.admit} allows: send, send as a probe, or do not send. */
export type CircuitBreakerAdmission = 'send' | 'probe' | 'refuse';

/** CircuitBreakerOutcome is how a call ended, for {@link CircuitBreaker.record}. */
export interface CircuitBreakerOutcome {
  /** False when the call failed. */
  readonly ok: boolean;
  /** How long the call took, in ms; a `slowCallRatio` trigger needs it (a call without it is not slow). */
  readonly durationMs?: number;
  /** True when {@link CircuitBreaker.admit} let the call through as a probe. */
  readonly probe: boolean;
}

/** A probe in flight; ids grow forever, so a call's id is never that of a later round's probe. */
interface Probe {
  readonly id: number;
  readonly sentAtMs: number;
}

/**
 * CircuitBreaker stops sending calls to a resource that is failing, and tries it again with a
 * few probes once `openMs` has passed.
 *
 * Closed, every call is sent, and its outcome counted in a sliding window of `windowMs` (see
 * {@link CircuitBreakerTrigger}). When the trigger fires it opens: nothing is sent for `openMs`.
 * Then the next calls, up to `halfOpenProbes`, are let through as probes (half-open) and the
 * others refused. When every probe succeeds it closes, with an empty window; when one fails, or
 * outlives `probeTimeoutMs`, it opens for another `openMs`. A probe fails when its call fails or,
 * under `slowCallRatio`, is slow. Refused calls are not calls: nothing about them is counted.
 *
 * Calls sent while closed may end after it opened: they no longer count in the window (which
 * only decides while closed, and is emptied on closing), and change nothing, except under
 * `consecutiveFailures`, which follows every answer.
 *
 * Time comes from the `clock` option only, read once per method call: with a `ManualClock` a
 * test walks it through every state. A clock going backwards never makes a probe due early.
 *
 * @example
 * const breaker = new CircuitBreaker({ trigger: { type: 'errorRatio', ratio: 0.5 }, openMs: 10_000 });
 * const call = breaker.tryAcquire();
 * if (call === undefined) return fallback(breaker.retryInMs());
 * try {
 *   const reply = await fetchPrices();
 *   call.succeeded();
 *   return reply;
 * } finally {
 *   call.failed(); // does nothing when the call already succeeded
 * }
 */
export class CircuitBreaker {
  /** name is what the breaker guards, as its events say it. */
  readonly name: string;
  private readonly s: CircuitBreakerSettings;
  private readonly window: CallWindow;
  private current: CircuitBreakerState = 'closed';
  /** While open: when the next probe is due. */
  private openUntilMs = Number.NEGATIVE_INFINITY;
  /** Failures in a row, of calls and probes alike. */
  private streak = 0;
  /** This half-open round: probes let through, and those that succeeded; `probes` are those in flight, oldest first. */
  private probesSent = 0;
  private probesPassed = 0;
  private readonly probes: Probe[] = [];
  private nextProbeId = 0;

  /** Creates a closed breaker; throws an `INVALID_OPTION` `FloodgateError` naming any bad option (`CircuitBreaker.openMs`). */
  constructor(options: CircuitBreakerOptions) {
    this.s = settingsOf(options);
    this.name = this.s.name;
    this.window = new CallWindow(this.s.windowMs, this.s.buckets);
  }

  /** state returns the state now: a probe past `probeTimeoutMs` has already reopened it. */
  get state(): CircuitBreakerState {
    this.expireProbe(this.s.clock.now());
    return this.current;
  }

  /**
   * retryInMs returns how long until a call may be sent, in whole ms: 0 when closed or when a probe
   * may go now; while open, until the next probe is due; while every probe is out, the soonest
   * the circuit could be sending again if they fail: the oldest probe's timeout (or now, without
   * one) plus `openMs`.
   */
  retryInMs(): number {
    const nowMs = this.s.clock.now();
    this.expireProbe(nowMs);
    if (this.current === 'closed') return 0;
    if (this.current === 'open') return Math.max(0, Math.ceil(this.openUntilMs - nowMs));
    const oldest = this.probes[0];
    if (this.probesSent < this.s.halfOpenProbes || oldest === undefined) return 0;
    const failsAtMs = this.s.probeTimeoutMs === Infinity ? nowMs : oldest.sentAtMs + this.s.probeTimeoutMs;
    return Math.max(0, Math.ceil(failsAtMs + this.s.openMs - nowMs));
  }

  /**
   * idle is true when no probe is in flight and a call may be sent now: replacing the breaker
   * with a fresh one would lose only its window's counts.
   */
  get idle(): boolean {
    return this.retryInMs() === 0 && this.probes.length === 0;
  }

  /**
   * admit returns whether a call may be sent now: `send` while closed; `probe` for the first
   * `halfOpenProbes` calls once `openMs` has passed (the first of them makes it half-open);
   * `refuse` otherwise. A call admitted must be ended with {@link record} (or {@link abandoned}).
   */
  admit(): CircuitBreakerAdmission {
    return this.admitAt(this.s.clock.now());
  }

  /**
   * tryAcquire returns a {@link CircuitBreakerCall} when a call may be sent now, which measures
   * the call's duration and records its outcome once; undefined when the circuit refuses it.
   */
  tryAcquire(): CircuitBreakerCall | undefined {
    const nowMs = this.s.clock.now();
    const admission = this.admitAt(nowMs);
    if (admission === 'refuse') return undefined;
    const probeId = admission === 'probe' ? this.probes[this.probes.length - 1]!.id : undefined;
    return new AdmittedCall(probeId, nowMs, this.end);
  }

  /**
   * record counts how an admitted call ended. A probe's outcome goes to the oldest probe in
   * flight; when none is (its time ran out, or its round was decided without it), it counts as a
   * call that ended late (see the class). Use {@link tryAcquire} to tie outcomes to their probes.
   */
  record(outcome: CircuitBreakerOutcome): void {
    const nowMs = this.s.clock.now();
    this.expireProbe(nowMs);
    const probe = outcome.probe ? this.probes.shift() : undefined;
    this.ended(nowMs, probe, outcome.ok, this.isSlow(outcome.durationMs));
  }

  /** abandoned records that an admitted call said nothing about the resource: a probe's place is freed for another probe. */
  abandoned(probe: boolean): void {
    this.expireProbe(this.s.clock.now());
    if (probe && this.probes.shift() !== undefined) this.probesSent--;
  }

  private admitAt(nowMs: number): CircuitBreakerAdmission {
    this.expireProbe(nowMs);
    if (this.current === 'closed') return 'send';
    if (this.current === 'open') {
      if (nowMs < this.openUntilMs) return 'refuse';
      this.probesSent = 0;
      this.probesPassed = 0;
      this.become('half-open', 'probe-due', nowMs);
    }
    if (this.probesSent >= this.s.halfOpenProbes) return 'refuse';
    this.probesSent++;
    this.probes.push({ id: this.nextProbeId++, sentAtMs: nowMs });
    return 'probe';
  }

  /** Ends a call of {@link tryAcquire}: its probe if still in flight, else a call that ended late. */
  private readonly end = (call: AdmittedCall, ending: CallEnding): void => {
    const nowMs = this.s.clock.now();
    this.expireProbe(nowMs);
    const at = call.probeId === undefined ? -1 : this.probes.findIndex((probe) => probe.id === call.probeId);
    const probe = at < 0 ? undefined : this.probes.splice(at, 1)[0];
    if (ending === 'abandon') {
      if (probe !== undefined) this.probesSent--;
      return;
    }
    this.ended(nowMs, probe, ending === 'succeeded', this.isSlow(nowMs - call.startedMs));
  };

  /** Counts an outcome: of `probe` when it is in flight in this round, else of a call. */
  private ended(nowMs: number, probe: Probe | undefined, ok: boolean, slow: boolean): void {
    this.streak = ok ? 0 : this.streak + 1;
    if (probe !== undefined) {
      if (!ok || slow) return this.open(nowMs, 'probe-failed');
      if (++this.probesPassed === this.s.halfOpenProbes) this.close(nowMs, 'probe-succeeded');
      return;
    }
    const trigger = this.s.trigger;
    if (this.current === 'closed') {
      this.window.add(nowMs, trigger.type === 'slowCallRatio' ? slow : !ok);
      if (this.tripped()) this.open(nowMs, trigger.type);
    } else if (trigger.type === 'consecutiveFailures') {
      if (ok) this.close(nowMs, 'call-succeeded');
      else if (this.current === 'open') this.openUntilMs = nowMs + this.s.openMs;
    }
  }

  /** Whether the trigger fires, right after a call was counted while closed. */
  private tripped(): boolean {
    const trigger = this.s.trigger;
    if (trigger.type === 'consecutiveFailures') return this.streak >= trigger.count;
    const { calls, failures } = this.window;
    if (calls < this.s.minCalls) return false;
    // A division, not `ratio * calls`: 0.07 * 100 is 7.000000000000001, but 7 / 100 is 0.07.
    return trigger.type === 'errorCount' ? failures >= trigger.count : failures / calls >= trigger.ratio;
  }

  private isSlow(durationMs: number | undefined): boolean {
    return this.s.trigger.type === 'slowCallRatio' && (durationMs ?? 0) > this.s.trigger.slowCallMs;
  }

  /** Reopens a half-open circuit whose oldest probe has outlived `probeTimeoutMs`, as of when it did. */
  private expireProbe(nowMs: number): void {
    const oldest = this.probes[0];
    if (oldest === undefined || this.current !== 'half-open') return;
    const timedOutAtMs = oldest.sentAtMs + this.s.probeTimeoutMs;
    if (nowMs > timedOutAtMs) this.open(timedOutAtMs, 'probe-timeout');
  }

  private open(atMs: number, reason: CircuitBreakerReason): void {
    this.openUntilMs = atMs + this.s.openMs;
    this.probes.length = 0;
    this.become('open', reason, atMs);
  }

  private close(atMs: number, reason: CircuitBreakerReason): void {
    this.window.clear();
    this.streak = 0;
    this.probes.length = 0;
    this.become('closed', reason, atMs);
  }

  private become(to: CircuitBreakerState, reason: CircuitBreakerReason, atMs: number): void {
    const from = this.current;
    if (from === to) return;
    this.current = to;
    this.s.onStateChange?.({ breaker: this.name, from, to, reason, atMs });
  }
}
