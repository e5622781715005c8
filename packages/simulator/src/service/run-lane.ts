import { ManualClock, type ConcurrencyLimiter, type ConcurrencyPermit } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { uniformAt } from '../random.js';
import { EventQueue, RANK } from './event-queue.js';
import { LaneMeter, type Levels, type MeterCut } from './meter.js';
import { buildLimiter } from './parse-protection.js';
import type { ProtectionLaneSpec, ServiceScenario } from './spec.js';
import { Upstream, type Job } from './upstream.js';

/** Streams of {@link uniformAt} draws: each kind of draw has its own, shared by every lane. */
export const STREAM = { tier: 1, serviceTime: 2, jitter: 3 } as const;
/** Attempts of one request are numbered within a block of this many draws. */
const ATTEMPT_BLOCK = 16;

/** LaneRunInput is what one lane runs: the scenario, its arrivals with their tiers, the protection, and how time is cut. */
export interface LaneRunInput {
  readonly scenario: ServiceScenario;
  readonly arrivals: Arrivals;
  /** The tier of each arrival (parallel to `arrivals`). */
  readonly tierOf: Uint8Array;
  readonly lane: ProtectionLaneSpec;
  readonly cut: MeterCut;
}

/** LaneRunOutput is what one lane measured. */
export interface LaneRunOutput {
  readonly meter: LaneMeter;
  /** Answers the service produced, within the charted time, after their client had left: work done for nobody. */
  readonly wasted: number;
  /** The most calls the service held at once. */
  readonly peakBacklog: number;
}

/** Call is one attempt of a request, from the client's side and the service's. */
interface Call extends Job {
  readonly request: number;
  readonly attempt: number;
  readonly tier: number;
  readonly sentMs: number;
  readonly permit: ConcurrencyPermit | undefined;
  /** True while the client waits for the answer. */
  open: boolean;
}

/**
 * runProtectionLane runs the scenario's arrivals through one lane's protection into a fresh copy
 * of the service, on virtual time, and returns what it measured. Arrivals are open loop: each is
 * sent at its time whatever happened to the others. A call the protection admits holds its
 * permit until its answer (released as `success`) or its client's timeout (released as `drop`,
 * the service's work going on regardless); a shed or timed-out call is retried when the scenario
 * says so. The run ends when every client has its outcome and the chart's time is covered.
 */
export function runProtectionLane(input: LaneRunInput): LaneRunOutput {
  return new LaneRun(input).run();
}

class LaneRun {
  private readonly clock = new ManualClock(0);
  private readonly events = new EventQueue();
  private readonly limiter: ConcurrencyLimiter | undefined;
  private readonly upstream: Upstream<Call>;
  private readonly meter: LaneMeter;
  private readonly horizonMs: number;
  /** Calls admitted whose client still waits. */
  private open = 0;
  private retriesPending = 0;
  private wasted = 0;

  constructor(private readonly input: LaneRunInput) {
    const { scenario, lane, cut } = input;
    this.limiter = buildLimiter(lane, scenario.service.tiers.length, this.clock);
    this.upstream = new Upstream<Call>(scenario.service, this.events, (call, atMs) => this.answer(call, atMs));
    this.meter = new LaneMeter(scenario.service.tiers.length, cut);
    this.horizonMs = cut.steps * cut.bucketMs;
  }

  run(): LaneRunOutput {
    const { atMs, length } = this.input.arrivals;
    let i = 0;
    for (;;) {
      const nextArrivalMs = i < length ? atMs[i]! : Infinity;
      const nextEventMs = this.events.nextAtMs();
      const clientsDone = i === length && this.open === 0 && this.retriesPending === 0;
      if (clientsDone && nextEventMs >= this.horizonMs) break;
      this.moveTo(Math.min(nextArrivalMs, nextEventMs));
      if (nextEventMs <= nextArrivalMs) this.events.runNext();
      else this.send(i++, 0, nextArrivalMs);
    }
    this.meter.advance(this.horizonMs, this.levels());
    return { meter: this.meter, wasted: this.wasted, peakBacklog: this.upstream.peakBacklog };
  }

  private moveTo(atMs: number): void {
    this.meter.advance(atMs, this.levels());
    this.clock.set(atMs);
  }

  private levels(): Levels {
    return { limit: this.limiter?.limit ?? NaN, inFlight: this.open, backlog: this.upstream.backlog };
  }

  /** Sends attempt `attempt` of request `request` at `nowMs`: shed at once, or into the service with a deadline. */
  private send(request: number, attempt: number, nowMs: number): void {
    const tier = this.input.tierOf[request]!;
    if (attempt === 0) this.meter.count('requests', tier, nowMs);
    this.meter.count('sent', tier, nowMs);
    const admission = this.limiter?.tryAcquire(this.input.lane.tiers === undefined ? 0 : tier);
    if (admission !== undefined && !admission.allowed) {
      this.meter.count('shed', tier, nowMs);
      this.retryLater(request, attempt, nowMs);
      return;
    }
    const quantile = uniformAt(this.input.scenario.seed, STREAM.serviceTime, request * ATTEMPT_BLOCK + attempt);
    const call: Call = { request, attempt, tier, sentMs: nowMs, quantile, permit: admission, open: true };
    this.open++;
    this.upstream.submit(call, nowMs);
    this.events.push(nowMs + this.input.scenario.service.timeoutMs, RANK.timeout, () => this.expire(call));
  }

  /** The service finished `call` at `atMs`: an answer in time, or work for a client that left. */
  private answer(call: Call, atMs: number): void {
    if (!call.open) {
      if (atMs < this.horizonMs) this.wasted++;
      return;
    }
    this.close(call);
    call.permit?.release('success');
    this.meter.answered(call.tier, call.sentMs, atMs);
    this.meter.count('succeeded', call.tier, this.input.arrivals.atMs[call.request]!);
  }

  /** The client of `call` gives up at `atMs` (unless answered already); the service keeps the work. */
  private expire(call: Call): void {
    if (!call.open) return;
    this.close(call);
    call.permit?.release('drop');
    const timeoutMs = this.input.scenario.service.timeoutMs;
    this.meter.timedOut(call.tier, call.sentMs, timeoutMs);
    this.retryLater(call.request, call.attempt, call.sentMs + timeoutMs);
  }

  private close(call: Call): void {
    call.open = false;
    this.open--;
  }

  /** Schedules the next attempt after the back-off, when retries are on, some are left, and it falls before the end. */
  private retryLater(request: number, attempt: number, nowMs: number): void {
    const { retries } = this.input.scenario.service;
    if (retries === undefined || attempt >= retries.max) return;
    const jitter =
      retries.jitterRatio * uniformAt(this.input.scenario.seed, STREAM.jitter, request * ATTEMPT_BLOCK + attempt);
    const atMs = nowMs + retries.backoffMs * retries.multiplier ** attempt * (1 - jitter);
    if (atMs >= this.input.scenario.durationMs) return;
    this.retriesPending++;
    this.events.push(atMs, RANK.retry, (sendMs) => {
      this.retriesPending--;
      this.send(request, attempt + 1, sendMs);
    });
  }
}
