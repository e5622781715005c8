import { generateArrivals, type Arrivals } from '../arrivals.js';
import { uniformAt } from '../random.js';
import { capacityTimeline, meanOver, perSecondOf, phasesOf, type ServicePhase } from './capacity.js';
import { nearestRank, type LevelSeries, type TierSeries } from './meter.js';
import { parseServiceScenario } from './parse-service.js';
import { runProtectionLane, STREAM } from './run-lane.js';
import type { ProtectionLaneSpec, ServiceScenario, TierSpec } from './spec.js';

/** TierTotals are one tier's figures over a whole lane. */
export interface TierTotals {
  readonly name: string;
  /** Requests (first attempts) and those answered in time on some attempt. */
  readonly requests: number;
  readonly succeeded: number;
  /** succeeded / requests (1 when there were none). */
  readonly successRatio: number;
  /** Attempts sent, answered in time, shed, and timed out. */
  readonly sent: number;
  readonly answered: number;
  readonly shed: number;
  readonly timedOut: number;
  /** Nearest-rank latency of the admitted calls as their client saw them (the timeout when it gave up), in ms; NaN when none. */
  readonly latencyMs: { readonly p50: number; readonly p99: number };
}

/** ServiceLaneResult is how one protection did. */
export interface ServiceLaneResult {
  readonly name: string;
  /** One line: the protection and its options. */
  readonly description: string;
  readonly tiers: readonly TierTotals[];
  /** Sums over the tiers, and the service's side: answers nobody waited for, and its largest backlog. */
  readonly totals: {
    readonly requests: number;
    readonly succeeded: number;
    readonly sent: number;
    readonly answered: number;
    readonly shed: number;
    readonly timedOut: number;
    readonly wasted: number;
    readonly peakBacklog: number;
  };
  /** Goodput ÷ capacity over the phases in which the offered load reached capacity; undefined when none did. */
  readonly goodputRatio: number | undefined;
  /** Goodput per second of each phase, by the time of the answer (parallel to the result's phases). */
  readonly phaseGoodputPerSecond: readonly number[];
  /**
   * Per step: each tier's counts (by the time each call was sent), the levels, the lane's goodput
   * (answers within the timeout, by the time of the answer), and its shed and timed-out calls (by
   * the time each was sent).
   */
  readonly series: {
    readonly tiers: readonly TierSeries[];
    readonly levels: LevelSeries;
    readonly goodput: Float64Array;
    readonly shed: Float64Array;
    readonly timedOut: Float64Array;
  };
}

/** ServiceSimulationResult is a whole service run: the scenario as checked, its traffic, the service's capacity and every lane. */
export interface ServiceSimulationResult {
  readonly scenario: ServiceScenario;
  readonly arrivals: Arrivals;
  /** The tier of each arrival. */
  readonly tierOf: Uint8Array;
  /** Number of chart steps of `scenario.bucketMs`, covering the duration. */
  readonly steps: number;
  /** Requests per step (first attempts): the offered load. */
  readonly offered: Float64Array;
  /** Per step: the service's slots, and the calls it can answer per second (time-weighted). */
  readonly capacity: { readonly slots: Float64Array; readonly perSecond: Float64Array };
  readonly phases: readonly ServicePhase[];
  readonly lanes: readonly ServiceLaneResult[];
}

/**
 * simulateService runs the scenario's traffic through each protection into an identical copy of
 * its service (same seed: each call takes the same time, in the same tier, in every lane), on
 * virtual time with the library's own `ConcurrencyLimiter`, and measures goodput, shedding,
 * timeouts, latency per tier and the limit over time. The same scenario always gives the same
 * result. `scenario` may be unchecked data: bad input throws a `SimulatorError` naming the field.
 *
 * @example
 * const result = simulateService({
 *   durationMs: 10_000,
 *   traffic: [{ type: 'poisson', ratePerSecond: 2000 }],
 *   service: { slots: 8, serviceMs: 20, timeoutMs: 1000 },
 *   protections: ['none', { adaptive: { minLimit: 4 } }],
 * });
 * result.lanes[1].goodputRatio;   // near 1: the adaptive lane answers about all the service can
 */
export function simulateService(scenario: ServiceScenario | unknown): ServiceSimulationResult {
  const checked = parseServiceScenario(scenario);
  const arrivals = generateArrivals(checked.traffic, checked.durationMs, checked.seed);
  const tierOf = tiersOf(arrivals.length, checked.service.tiers, checked.seed);
  const timeline = capacityTimeline(checked.service);
  const phases = phasesOf(checked.traffic, timeline, arrivals, checked.durationMs);
  const steps = Math.max(1, Math.ceil(checked.durationMs / checked.bucketMs));
  const cut = {
    bucketMs: checked.bucketMs,
    steps,
    phaseStartsMs: phases.map((p) => p.fromMs),
    endMs: checked.durationMs,
  };
  const lanes = checked.protections.map((lane) => {
    const run = runProtectionLane({ scenario: checked, arrivals, tierOf, lane, cut });
    const tiers = run.meter.tiers();
    const phaseGoodputPerSecond = phases.map((p, i) => (run.meter.phaseGoodput[i]! * 1000) / (p.toMs - p.fromMs));
    return {
      name: lane.name,
      description: describeProtection(lane),
      tiers: checked.service.tiers.map((tier, t) => tierTotals(tier, tiers[t]!, run.meter.latenciesOf(t))),
      totals: { ...sumTiers(tiers), wasted: run.wasted, peakBacklog: run.peakBacklog },
      goodputRatio: goodputRatio(phases, phaseGoodputPerSecond),
      phaseGoodputPerSecond,
      series: {
        tiers,
        levels: run.meter.levels(),
        goodput: run.meter.goodput,
        shed: sumOf(tiers, 'shed'),
        timedOut: sumOf(tiers, 'timedOut'),
      },
    };
  });
  const stepSpan = (s: number): [number, number] => [s * checked.bucketMs, (s + 1) * checked.bucketMs];
  const capacity = {
    slots: Float64Array.from({ length: steps }, (_, s) => meanOver(timeline, ...stepSpan(s), (p) => p.slots)),
    perSecond: Float64Array.from({ length: steps }, (_, s) => meanOver(timeline, ...stepSpan(s), perSecondOf)),
  };
  const offered = new Float64Array(steps);
  for (let i = 0; i < arrivals.length; i++)
    offered[Math.min(steps - 1, Math.floor(arrivals.atMs[i]! / checked.bucketMs))]!++;
  return { scenario: checked, arrivals, tierOf, steps, offered, capacity, phases, lanes };
}

/** Each arrival's tier, drawn by the tiers' shares from its own hash, the same in every lane. */
function tiersOf(length: number, tiers: readonly TierSpec[], seed: number): Uint8Array {
  const tierOf = new Uint8Array(length);
  if (tiers.length === 1) return tierOf;
  const bounds = tiers.map((_, t) => tiers.slice(0, t + 1).reduce((sum, x) => sum + x.share, 0));
  for (let i = 0; i < length; i++) {
    const u = uniformAt(seed, STREAM.tier, i);
    let t = 0;
    while (t < tiers.length - 1 && u >= bounds[t]!) t++;
    tierOf[i] = t;
  }
  return tierOf;
}

function total(values: Float64Array): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum;
}

function tierTotals(tier: TierSpec, series: TierSeries, latencies: number[]): TierTotals {
  const requests = total(series.requests);
  const succeeded = total(series.succeeded);
  return {
    name: tier.name,
    requests,
    succeeded,
    successRatio: requests === 0 ? 1 : succeeded / requests,
    sent: total(series.sent),
    answered: total(series.answered),
    shed: total(series.shed),
    timedOut: total(series.timedOut),
    latencyMs: { p50: nearestRank(latencies, 0.5), p99: nearestRank(latencies, 0.99) },
  };
}

function sumTiers(tiers: readonly TierSeries[]): {
  requests: number;
  succeeded: number;
  sent: number;
  answered: number;
  shed: number;
  timedOut: number;
} {
  const sum = (kind: 'requests' | 'succeeded' | 'sent' | 'answered' | 'shed' | 'timedOut'): number =>
    tiers.reduce((n, t) => n + total(t[kind]), 0);
  return {
    requests: sum('requests'),
    succeeded: sum('succeeded'),
    sent: sum('sent'),
    answered: sum('answered'),
    shed: sum('shed'),
    timedOut: sum('timedOut'),
  };
}

function sumOf(tiers: readonly TierSeries[], kind: 'shed' | 'timedOut'): Float64Array {
  const out = new Float64Array(tiers[0]![kind].length);
  for (const t of tiers) for (let s = 0; s < out.length; s++) out[s]! += t[kind][s]!;
  return out;
}

/** Goodput over capacity in the phases whose offered load reached capacity. */
function goodputRatio(phases: readonly ServicePhase[], goodputPerSecond: readonly number[]): number | undefined {
  let goodput = 0;
  let capacity = 0;
  for (const [i, p] of phases.entries()) {
    if (p.offeredPerSecond < p.capacityPerSecond) continue;
    const seconds = (p.toMs - p.fromMs) / 1000;
    goodput += goodputPerSecond[i]! * seconds;
    capacity += p.capacityPerSecond * seconds;
  }
  return capacity === 0 ? undefined : goodput / capacity;
}

/** describeProtection returns a one-line description of a lane's protection, e.g. `fixed concurrency limit 40`. */
export function describeProtection(lane: ProtectionLaneSpec): string {
  const p = lane.protection;
  const base =
    p.type === 'none'
      ? 'no protection: every call goes to the service'
      : p.type === 'concurrency'
        ? `fixed concurrency limit ${p.limit}`
        : `adaptive concurrency limit (${
            Object.keys(p.options).length === 0
              ? "the library's defaults"
              : Object.entries(p.options)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(', ')
          })`;
  if (lane.tiers === undefined) return base;
  const reserve = lane.tiers.reserveRatio === undefined ? "the library's default share" : `${lane.tiers.reserveRatio}`;
  return `${base}; tiers by priority, each tier below the top held back ${reserve} of the limit more`;
}
