/**
 * The adaptive concurrency estimator: learns how many calls a service can have in flight from the
 * latency and the drops of the calls it answers, told nothing about its capacity.
 */
import { FloodgateError, describeValue } from '../errors.js';
import { positiveInteger, positiveNumber } from '../validate.js';
import { ProbeCohort } from './probe-cohort.js';
import { SampleWindow } from './sample-window.js';

/** CallOutcome is how a call that held a slot ended, as far as the estimator is concerned. */
export type CallOutcome =
  /** The service answered: its round trip is a latency sample. */
  | 'success'
  /** The service showed overload (a timeout, a 503, a refused connection): the limit backs off. */
  | 'drop'
  /** Says nothing about the service's load (a fast error, a client that left, a health check): not sampled. */
  | 'ignore';

/** AdaptiveLimitOptions configures an {@link AdaptiveLimit}; every field is optional. */
export interface AdaptiveLimitOptions {
  /** The limit before anything is learned (default 20). */
  readonly initialLimit?: number;
  /** The floor: the limit never goes below it, so a quiet service is never starved (default 2). */
  readonly minLimit?: number;
  /** The ceiling (default 1000). */
  readonly maxLimit?: number;
  /** The shortest sample window, in ms (default 100); a window also lasts at least twice the baseline latency. */
  readonly windowMs?: number;
  /** Samples a window needs before it may close (default 10). */
  readonly minSamples?: number;
  /** Samples at which a window closes whatever its age (default 250). */
  readonly maxSamples?: number;
  /**
   * Calls the limit lets wait in the service's own queue at equilibrium, as a function of the limit
   * or a fixed number: the headroom that keeps every slot of the service busy. By default it
   * follows the noise of the latency: `√limit` while no queue shows, and once one shows, one call
   * plus twice the noise of the estimate (from the standard errors of the window's and the
   * baseline's mean latency), at most `√limit`. A service whose latency hardly varies is then kept
   * one call from idle; a noisy one keeps the margin its noise needs.
   */
  readonly queueTarget?: number | ((limit: number) => number);
  /** Weight of a window's estimate against the current limit, above 0 and at most 1 (default 0.5). */
  readonly smoothing?: number;
  /** Factor the limit is multiplied by after a window with drops, above 0 and below 1 (default 0.9). */
  readonly backoffRatio?: number;
  /** Longest time between two probes of the baseline latency, in ms (default 10_000). */
  readonly probeIntervalMs?: number;
  /** Shortest time between two probes, when the limit fell and may be blaming a slower service on queueing, in ms (default 500). */
  readonly minProbeIntervalMs?: number;
}

/** AdaptiveLimitSnapshot is what an {@link AdaptiveLimit} knows now, for metrics and dashboards. */
export interface AdaptiveLimitSnapshot {
  /** The limit in force now (halved during a probe), a whole number. */
  readonly limit: number;
  /** The learned limit, with its fraction (the limit a probe returns to). */
  readonly estimate: number;
  /** The service's latency without queueing, in ms; undefined until the first window closed. */
  readonly baselineRttMs: number | undefined;
  /** The last closed window's median latency, in ms; undefined until then. */
  readonly sampleRttMs: number | undefined;
  /** True while the limit is lowered to measure the baseline. */
  readonly probing: boolean;
}

/** What a window closed with, before it is applied. */
interface WindowResult {
  readonly medianMs: number;
  /** The standard error of the window's mean latency over that mean. */
  readonly relativeError: number;
  readonly drops: number;
  readonly saturated: boolean;
  /** The share of the window's calls that found the limit reached: shed, queued, or given the last slot. */
  readonly boundShare: number;
}

/**
 * AdaptiveLimit estimates a service's concurrency limit from the calls it answers: the number of
 * calls in flight that keeps every slot busy with a short queue and no more. It is a pure state
 * machine: every method takes the current time, and nothing reads a clock or sets a timer.
 *
 * The estimate follows Little's law. A service with `c` slots and service time `B` answers `c / B`
 * calls a second; `limit` calls in flight then see a latency of `B · limit / c`, so
 * `limit · B / rtt` is the number of calls actually being served and the rest queue. Every window
 * (at least `windowMs` and `minSamples` calls) moves the limit towards `limit · B / rtt +
 * queueTarget(limit)`, the slots in use plus a small allowed queue; a fall is weighted by the
 * square root of the share of the window's calls that found the limit reached, since a limit that
 * calls seldom reach (a load near the capacity, queueing in bursts) is not what queues them.
 * Where this estimator parts from its peers, and why:
 *
 * - **The baseline `B` is measured by a probe, never a moving average.** An average of latency
 *   under a standing queue drifts up with the queue, and the limit with it (the drift that
 *   Netflix's Gradient2 users reported). `B` moves only by a probe: the limit is halved, and once
 *   the calls in flight have drained below it, the median latency of the whole cohort of calls
 *   sent in the next window (waiting for the slowest of them, see `ProbeCohort`) becomes `B`. A
 *   window whose median is a quarter below `B` calls a probe soon; `B` never follows windows
 *   down by itself, since the least of many noisy medians would sit below the truth. A probe is due
 *   every `probeIntervalMs`, and sooner (`minProbeIntervalMs`) when the limit fell by a quarter
 *   since the last one, because a service that got slower looks to this formula like queueing
 *   and would otherwise be starved; that probe need only go under the slots the limit follows,
 *   not halve it. The limit returns to its value before the probe, so a probe never pins the
 *   limit to a floor (Envoy's gradient controller). The first baseline comes from the first
 *   window, which may have queued (at the capacity, a service queues well below a limit that is
 *   too high) whether or not the limit was used: the first window that uses the limit probes it.
 * - **Medians and quartiles, not minimums.** A few fast calls (health checks) cannot pull the
 *   baseline down; callers can also keep them out with the `ignore` outcome.
 * - **Only answers are samples.** Fast failures and shed calls are not latency: an error is
 *   `ignore` or `drop`, a shed call never held a slot.
 * - **The limit grows only when it was used**: a window in which in-flight calls never reached the
 *   limit cannot raise it, so a quiet period does not leave a limit nobody tested.
 * - **Drops back off**: a window with a drop multiplies the limit by `backoffRatio`.
 *
 * @example
 * const estimator = new AdaptiveLimit({ minLimit: 4 });
 * // when a call is admitted: const inFlight = ...; const startMs = clock.now();
 * // when it ends:
 * estimator.record(clock.now(), { startMs, inFlight, outcome: 'success' });
 * estimator.limit; // the whole number of calls allowed in flight now
 */
export class AdaptiveLimit {
  private readonly minLimit: number;
  private readonly maxLimit: number;
  private readonly windowMs: number;
  private readonly minSamples: number;
  private readonly queueTarget: ((limit: number) => number) | undefined;
  private readonly smoothing: number;
  private readonly backoffRatio: number;
  private readonly probeIntervalMs: number;
  private readonly minProbeIntervalMs: number;
  private readonly window: SampleWindow;

  private estimateValue: number;
  private current: number;
  private baselineMs: number | undefined = undefined;
  /** The relative standard error of the mean latency of the calls that gave the baseline. */
  private baselineRelativeError = 0;
  private lastMedianMs: number | undefined = undefined;
  /** When the running window opened, in ms; NaN until a sample opened it. */
  private windowStartMs = NaN;
  /** When the running probe began, in ms; NaN when none runs. */
  private probeStartMs = NaN;
  /** The running probe's cohort: the calls sent while it holds the limit down, once drained. */
  private cohort: ProbeCohort | undefined = undefined;
  private lastProbeEndMs = -Infinity;
  /** The estimate when the baseline was last measured: a quarter below it, a probe comes sooner. */
  private estimateAtProbe = Infinity;
  private probeDue = false;
  /** True while the baseline comes from a window, not a probe: the first window that uses the limit probes it. */
  private provisional = false;
  /** Where the last window moved the estimate towards. */
  private lastTarget = NaN;
  /** The queue allowed by the last window, in calls. */
  private allowance = 0;

  /** Creates an estimator at `initialLimit`, with no baseline yet. */
  constructor(options: AdaptiveLimitOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `AdaptiveLimit options must be an object, got ${describeValue(options)}`,
        'AdaptiveLimit',
      );
    }
    this.minLimit = positiveInteger(options.minLimit ?? 2, 'adaptive.minLimit');
    this.maxLimit = positiveInteger(options.maxLimit ?? 1000, 'adaptive.maxLimit');
    if (this.minLimit > this.maxLimit) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `adaptive.minLimit (${this.minLimit}) must not be above adaptive.maxLimit (${this.maxLimit})`,
        'adaptive.minLimit',
      );
    }
    const initial = positiveInteger(
      options.initialLimit ?? Math.min(Math.max(20, this.minLimit), this.maxLimit),
      'adaptive.initialLimit',
    );
    if (initial < this.minLimit || initial > this.maxLimit) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `adaptive.initialLimit (${initial}) must lie between minLimit (${this.minLimit}) and maxLimit (${this.maxLimit})`,
        'adaptive.initialLimit',
      );
    }
    this.windowMs = positiveNumber(options.windowMs ?? 100, 'adaptive.windowMs');
    this.minSamples = positiveInteger(options.minSamples ?? 10, 'adaptive.minSamples');
    const maxSamples = positiveInteger(options.maxSamples ?? 250, 'adaptive.maxSamples');
    if (maxSamples < this.minSamples) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `adaptive.maxSamples (${maxSamples}) must be at least minSamples (${this.minSamples})`,
        'adaptive.maxSamples',
      );
    }
    this.queueTarget = checkQueueTarget(options.queueTarget);
    this.smoothing = fraction(options.smoothing ?? 0.5, 'adaptive.smoothing', true);
    this.backoffRatio = fraction(options.backoffRatio ?? 0.9, 'adaptive.backoffRatio', false);
    this.probeIntervalMs = positiveNumber(options.probeIntervalMs ?? 10_000, 'adaptive.probeIntervalMs');
    this.minProbeIntervalMs = positiveNumber(options.minProbeIntervalMs ?? 500, 'adaptive.minProbeIntervalMs');
    this.window = new SampleWindow(maxSamples);
    this.estimateValue = initial;
    this.current = initial;
  }

  /** limit returns the whole number of calls allowed in flight now (lowered during a probe). */
  get limit(): number {
    return this.current;
  }

  /** learnedLimit returns the learned limit as a whole number: the limit in force, but for a probe's cut. */
  get learnedLimit(): number {
    return this.wholeLimit();
  }

  /** sampleRttMs returns the last closed window's median latency, in ms; undefined until then. */
  get sampleRttMs(): number | undefined {
    return this.lastMedianMs;
  }

  /** snapshot returns what the estimator knows now. */
  snapshot(): AdaptiveLimitSnapshot {
    return {
      limit: this.current,
      estimate: this.estimateValue,
      baselineRttMs: this.baselineMs,
      sampleRttMs: this.lastMedianMs,
      probing: !Number.isNaN(this.probeStartMs),
    };
  }

  /**
   * saturated records that a call found no free slot at `nowMs` (it was shed or queued): the
   * limit was used, so the window may raise it.
   */
  saturated(nowMs: number): void {
    this.open(nowMs);
    this.window.arrived(true);
  }

  /**
   * sent tells the estimator that a call got a slot at `nowMs`. It matters only during a probe,
   * whose sample is the whole cohort of calls sent in its window; without it, a probe samples the
   * calls that end in its window (which favours the short ones).
   */
  sent(nowMs: number): void {
    this.cohort?.sent(nowMs);
  }

  /** probing returns whether a probe holds the limit down now (then each grant should be told by {@link sent}). */
  get probing(): boolean {
    return this.cohort !== undefined;
  }

  /**
   * record takes one call that held a slot and ended at `nowMs`: `startMs` is when it got the slot,
   * `inFlight` how many held a slot then (itself included), `inFlightAfter` how many still hold
   * one now. It returns true when this sample closed a window and the limit may have changed. A
   * time before the call's start (a clock set back) is taken as a zero latency of no weight: the
   * sample is ignored.
   */
  record(
    nowMs: number,
    call: {
      readonly startMs: number;
      readonly inFlight: number;
      readonly outcome: CallOutcome;
      readonly inFlightAfter?: number;
    },
  ): boolean {
    if (this.cohort !== undefined) return this.recordProbe(nowMs, call, this.cohort);
    this.open(nowMs);
    this.window.arrived(call.inFlight >= this.current);
    const rttMs = nowMs - call.startMs;
    if (call.outcome === 'drop') this.window.drops++;
    else if (call.outcome === 'success' && rttMs >= 0) this.window.add(rttMs);
    return this.maybeClose(nowMs);
  }

  /** Takes a call's end during a probe, and ends the probe once its cohort has ended. */
  private recordProbe(
    nowMs: number,
    call: { readonly startMs: number; readonly outcome: CallOutcome; readonly inFlightAfter?: number },
    cohort: ProbeCohort,
  ): boolean {
    cohort.drained(nowMs, call.inFlightAfter ?? 0, this.current);
    const member = cohort.holds(call.startMs);
    if (member) {
      const rttMs = nowMs - call.startMs;
      if (call.outcome === 'drop') this.window.drops++;
      else if (call.outcome === 'success' && rttMs >= 0) this.window.add(rttMs);
    }
    if (!cohort.complete(nowMs, member)) return false;
    const result = this.result(this.window, true);
    this.window.clear();
    this.endProbe(nowMs, result);
    return true;
  }

  private open(nowMs: number): void {
    if (Number.isNaN(this.windowStartMs)) this.windowStartMs = nowMs;
  }

  private windowLengthMs(): number {
    return Math.max(this.windowMs, 2 * (this.baselineMs ?? 0));
  }

  private maybeClose(nowMs: number): boolean {
    const w = this.window;
    const lengthMs = this.windowLengthMs();
    const full = w.full || (w.size >= this.minSamples && nowMs - this.windowStartMs >= lengthMs);
    const dropped = w.drops > 0 && nowMs - this.windowStartMs >= lengthMs;
    if (!full && !dropped) return false;
    const result = this.result(w, w.saturated);
    w.clear();
    this.windowStartMs = NaN;
    this.apply(nowMs, result);
    return true;
  }

  private result(w: SampleWindow, saturated: boolean): WindowResult {
    return {
      medianMs: w.median(),
      relativeError: w.relativeError(),
      drops: w.drops,
      saturated,
      boundShare: w.boundShare,
    };
  }

  /** Moves the estimate by one window and decides whether a probe comes next. */
  private apply(nowMs: number, w: WindowResult): void {
    if (!Number.isNaN(w.medianMs)) this.lastMedianMs = w.medianMs;
    if (w.drops > 0) {
      this.setEstimate(this.estimateValue * this.backoffRatio);
    } else if (!Number.isNaN(w.medianMs)) {
      if (this.baselineMs === undefined) {
        this.setBaseline(w);
        this.estimateAtProbe = this.estimateValue;
        // A first window may have seen a queue whether or not the limit was used (at the capacity,
        // a service queues calls well below a limit that is too high): the baseline stays
        // provisional until a probe measures it, which the first window that uses the limit calls.
        this.provisional = true;
      }
      if (this.provisional && w.saturated) this.probeDue = true;
      // A median below the baseline says the service got faster: measure it again, soon. The
      // baseline never follows a window down by itself, since the least of many noisy medians
      // would sit below the truth and hold the limit under the slots.
      const baselineMs = this.baselineMs ?? w.medianMs;
      if (w.medianMs < 0.75 * baselineMs && w.saturated) this.probeDue = true;
      this.follow(w, baselineMs);
    }
    const probe = this.dueProbe(nowMs);
    if (probe !== undefined) this.beginProbe(nowMs, probe);
  }

  /** Moves the estimate towards the slots in use plus the allowed queue, by one window. */
  private follow(w: WindowResult, baselineMs: number): void {
    // No queue while the median is at or below the baseline; this also keeps a window of calls
    // answered within the clock's resolution (a median and a baseline of 0) from making NaN.
    const queued = w.medianMs > baselineMs;
    const gradient = queued ? Math.max(0.5, baselineMs / w.medianMs) : 1;
    const estimate = this.estimateValue;
    this.allowance = this.allowanceAt(estimate, w, queued);
    const target = estimate * gradient + this.allowance;
    this.lastTarget = target;
    // A limit that calls seldom reach (a load near the capacity, queueing in bursts) is not what
    // queues them: it falls by the square root of the share of calls that found it reached, so
    // a limit reached now and then still falls, more slowly, and one always reached falls in full.
    const weight = Math.sqrt(w.boundShare);
    if (target < estimate) this.setEstimate(estimate + this.smoothing * weight * (target - estimate));
    else if (w.saturated) this.setEstimate(estimate + this.smoothing * (target - estimate));
  }

  /**
   * The calls allowed to queue at the service after window `w`: `queueTarget(estimate)` when it
   * was given. By default `√estimate` while no queue shows; once one shows, one call plus twice
   * the noise of `estimate × gradient` (the relative standard errors of the window's and the
   * baseline's mean latency), at most `√estimate`: a service whose latency hardly varies keeps
   * one call waiting, a noisy one the margin its noise needs to keep every slot busy. The mean's
   * error, not the median's, measures that noise: a service whose calls are mostly short and
   * sometimes long has a precise median, but the median then moves with a queue more than the
   * mean does (Little's law holds for means), and the estimate needs the margin.
   */
  private allowanceAt(estimate: number, w: WindowResult, queued: boolean): number {
    if (this.queueTarget !== undefined) return this.queueTarget(estimate);
    const root = Math.sqrt(estimate);
    if (!queued) return root;
    const noise = estimate * Math.hypot(this.baselineRelativeError, w.relativeError);
    return Number.isFinite(noise) ? Math.min(root, Math.max(1, 2 * noise)) : root;
  }

  private setBaseline(w: WindowResult): void {
    this.baselineMs = w.medianMs;
    this.baselineRelativeError = w.relativeError;
  }

  /** Which probe is due at `nowMs`, if any: `fell` checks a limit that fell a quarter (see probeLimit). */
  private dueProbe(nowMs: number): 'halve' | 'fell' | undefined {
    if (this.baselineMs === undefined) return undefined;
    // A provisional baseline is probed once a window used the limit, not before: a probe while
    // the limit is not used measures nothing a window did not, and holds the limit down for it.
    if (this.provisional) return this.probeDue ? 'halve' : undefined;
    const sinceMs = nowMs - this.lastProbeEndMs;
    if (sinceMs >= this.probeIntervalMs) return 'halve';
    if (sinceMs < this.minProbeIntervalMs) return undefined;
    // A limit that moved far from where the baseline was measured may rest on a stale baseline.
    if (this.probeDue || this.current === this.minLimit || this.estimateValue >= 1.5 * this.estimateAtProbe)
      return 'halve';
    return this.estimateValue <= 0.75 * this.estimateAtProbe ? 'fell' : undefined;
  }

  private beginProbe(nowMs: number, kind: 'halve' | 'fell'): void {
    this.probeDue = false;
    this.probeStartMs = nowMs;
    this.cohort = new ProbeCohort(nowMs, this.windowLengthMs(), 5 * this.minSamples);
    this.current = Math.max(this.minLimit, Math.floor(this.probeLimit(kind)));
  }

  /**
   * The limit a probe holds: half the estimate, or, when the probe checks whether a limit that
   * fell a quarter blames a slower service on queueing, three quarters of the estimate less its
   * allowed queue, if that is higher. A limit fell either because the slots are fewer, and it
   * follows them with its allowance, or because the service is slower, and it sits further below
   * the slots: either way that is under them, and costs the slots less than halving.
   */
  private probeLimit(kind: 'halve' | 'fell'): number {
    const half = this.estimateValue / 2;
    return kind === 'fell' ? Math.max(half, 0.75 * (this.estimateValue - this.allowance)) : half;
  }

  private endProbe(nowMs: number, w: WindowResult): void {
    this.probeStartMs = NaN;
    this.cohort = undefined;
    this.lastProbeEndMs = nowMs;
    if (w.drops > 0) this.setEstimate(this.estimateValue * this.backoffRatio);
    const before = this.baselineMs;
    if (!Number.isNaN(w.medianMs)) {
      // A probe a quarter below the last baseline may have halved a limit still above the service's
      // slots (and measured some queue): probe again, soon, until the baseline settles.
      this.probeDue = before !== undefined && w.medianMs < 0.75 * before;
      this.setBaseline(w);
      this.provisional = false;
      this.lastMedianMs = w.medianMs;
    }
    this.estimateAtProbe = this.referenceAfterProbe(before, w.medianMs);
    this.current = this.wholeLimit();
  }

  /**
   * The estimate that later ones are compared with, for a probe soon, after a probe that measured
   * `medianMs` where the baseline was `beforeMs`: the estimate now, but for two cases. A probe that
   * found the baseline where it was (within a tenth) has shown a fall to be the slots', not a
   * slower service: the comparison starts from where the limit was heading, so the rest of a fall
   * still under way calls no second probe. A probe that found the service slower has shown the
   * fall to be the stale baseline's: the limit climbs back, and the comparison stays where it was,
   * so the climb calls no second probe either.
   */
  private referenceAfterProbe(beforeMs: number | undefined, medianMs: number): number {
    const estimate = this.estimateValue;
    if (beforeMs === undefined || Number.isNaN(medianMs)) return estimate;
    if (Math.abs(medianMs - beforeMs) <= 0.1 * beforeMs && this.lastTarget < estimate)
      return Math.max(this.lastTarget, this.minLimit);
    if (medianMs > 1.1 * beforeMs) return Math.max(estimate, this.estimateAtProbe);
    return estimate;
  }

  private setEstimate(value: number): void {
    this.estimateValue = Math.min(this.maxLimit, Math.max(this.minLimit, value));
    if (Number.isNaN(this.probeStartMs)) this.current = this.wholeLimit();
  }

  private wholeLimit(): number {
    return Math.min(this.maxLimit, Math.max(this.minLimit, Math.floor(this.estimateValue)));
  }
}

function checkQueueTarget(value: AdaptiveLimitOptions['queueTarget']): ((limit: number) => number) | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return (limit) => Math.max(0, Number(value(limit)) || 0);
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return () => value;
  throw new FloodgateError(
    'INVALID_OPTION',
    `adaptive.queueTarget must be a number of calls of at least 0 or a function of the limit, got ${describeValue(value)}`,
    'adaptive.queueTarget',
  );
}

function fraction(value: unknown, option: string, oneAllowed: boolean): number {
  if (typeof value === 'number' && value > 0 && (value < 1 || (oneAllowed && value === 1))) return value;
  const range = oneAllowed ? 'above 0 and at most 1' : 'above 0 and below 1';
  throw new FloodgateError(
    'INVALID_OPTION',
    `${option} must be a number ${range}, got ${describeValue(value)}`,
    option,
  );
}
