import { capacityTimeline, perSecondOf } from '../service/capacity.js';
import type { ServiceSimulationResult } from '../service/simulate-service.js';
import type { ServiceSpec, ServiceTimeSpec } from '../service/spec.js';
import { formatNumber } from './format.js';
import { cleanForJson, textTable, trafficForJson } from './summary.js';

/** LANE_HEADERS are the column titles of {@link laneRows}. */
export const LANE_HEADERS = [
  'lane',
  'sent',
  'answered in time',
  'shed',
  'timed out',
  'goodput ÷ capacity (overloaded)',
  'wasted',
  'peak backlog',
] as const;

/** laneRows returns one row of text cells per lane: its calls' outcomes, its goodput ratio, and the service's side. */
export function laneRows(result: ServiceSimulationResult): string[][] {
  return result.lanes.map((lane) => {
    const t = lane.totals;
    const ratio = lane.goodputRatio === undefined ? 'n/a' : formatNumber(lane.goodputRatio);
    return [
      lane.name,
      String(t.sent),
      String(t.answered),
      String(t.shed),
      String(t.timedOut),
      ratio,
      String(t.wasted),
      String(t.peakBacklog),
    ];
  });
}

/** phaseHeaders returns the column titles of {@link phaseRows}: the phase, capacity, offered load, then one per lane. */
export function phaseHeaders(result: ServiceSimulationResult): string[] {
  return ['phase (s)', 'capacity/s', 'offered/s', ...result.lanes.map((lane) => `${lane.name}: goodput/s`)];
}

/** phaseRows returns one row per phase: its capacity and offered load per second, and each lane's goodput per second with its share of capacity. */
export function phaseRows(result: ServiceSimulationResult): string[][] {
  return result.phases.map((p, i) => [
    `${formatNumber(p.fromMs / 1000)}-${formatNumber(p.toMs / 1000)}`,
    formatNumber(p.capacityPerSecond, 1),
    formatNumber(p.offeredPerSecond, 1),
    ...result.lanes.map((lane) => {
      const goodput = lane.phaseGoodputPerSecond[i]!;
      return `${formatNumber(goodput, 1)} (${percent(goodput / p.capacityPerSecond)})`;
    }),
  ]);
}

/** TIER_HEADERS are the column titles of {@link tierRows}. */
export const TIER_HEADERS = [
  'tier',
  'lane',
  'requests',
  'succeeded',
  'shed',
  'timed out',
  'latency ms p50 / p99',
] as const;

/** tierRows returns one row per tier and lane: its requests, how many succeeded, its attempts shed and timed out, and its admitted calls' latency. */
export function tierRows(result: ServiceSimulationResult): string[][] {
  return result.scenario.service.tiers.flatMap((tier, t) =>
    result.lanes.map((lane) => {
      const x = lane.tiers[t]!;
      return [
        tier.name,
        lane.name,
        String(x.requests),
        `${x.succeeded} (${percent(x.successRatio)})`,
        String(x.shed),
        String(x.timedOut),
        `${formatNumber(x.latencyMs.p50, 1)} / ${formatNumber(x.latencyMs.p99, 1)}`,
      ];
    }),
  );
}

function percent(ratio: number): string {
  return `${formatNumber(ratio * 100, 1)}%`;
}

/** describeService returns the service in one line: slots, service time, timeout, retries, tiers and capacity steps. */
export function describeService(service: ServiceSpec): string {
  const parts = [
    `${service.slots} slots, ${describeServiceTime(service.serviceMs)}`,
    `client timeout ${formatNumber(service.timeoutMs)} ms`,
  ];
  const r = service.retries;
  if (r !== undefined)
    parts.push(
      `up to ${r.max} retries after ${formatNumber(r.backoffMs)} ms × ${formatNumber(r.multiplier)}^k${r.jitterRatio > 0 ? `, less up to ${percent(r.jitterRatio)} jitter` : ''}`,
    );
  if (service.tiers.length > 1)
    parts.push(`tiers ${service.tiers.map((t) => `${t.name} ${percent(t.share)}`).join(', ')}`);
  for (const step of service.capacity) {
    const changes = [
      step.slots === undefined ? '' : `${step.slots} slots`,
      step.serviceMs === undefined ? '' : describeServiceTime(step.serviceMs),
    ].filter((c) => c !== '');
    parts.push(`from ${formatNumber(step.atMs)} ms ${changes.join(', ')}`);
  }
  return parts.join('; ');
}

function describeServiceTime(spec: ServiceTimeSpec): string {
  const mean = `${formatNumber(spec.meanMs)} ms`;
  if (spec.distribution === 'constant') return `${mean} a call`;
  if (spec.distribution === 'exponential') return `exponential service time, mean ${mean}`;
  return `lognormal service time, mean ${mean}, p99 ${formatNumber(spec.p99Ms)} ms`;
}

/**
 * renderServiceTextSummary returns a plain-text summary of a service run: each lane's outcomes
 * and goodput ratio, goodput per phase against capacity, and each tier's success and latency,
 * with the lanes' protections underneath. Same result, same text.
 *
 * @example
 * process.stdout.write(renderServiceTextSummary(simulateService(scenario)));
 */
export function renderServiceTextSummary(result: ServiceSimulationResult): string {
  const sc = result.scenario;
  const out = [
    `floodgate service simulation: ${result.arrivals.length} requests over ${formatNumber(sc.durationMs)} ms, seed ${sc.seed}`,
    `service: ${describeService(sc.service)}`,
    '',
    ...textTable([[...LANE_HEADERS], ...laneRows(result)]),
    '',
    ...textTable([phaseHeaders(result), ...phaseRows(result)]),
    '',
    ...textTable([[...TIER_HEADERS], ...tierRows(result)]),
    '',
    ...result.lanes.map((lane) => `${lane.name}: ${lane.description}`),
  ];
  return out.join('\n') + '\n';
}

/**
 * serviceSummaryJson returns a service run's summary as plain data: the scenario (trace rows
 * counted), the capacity over time, the phases, and each lane's totals, goodput ratio, goodput
 * per phase and tiers; numbers rounded to 3 decimals and non-finite ones written as strings.
 */
export function serviceSummaryJson(result: ServiceSimulationResult): unknown {
  const sc = result.scenario;
  return cleanForJson({
    scenario: { ...sc, traffic: trafficForJson(sc.traffic) },
    requests: result.arrivals.length,
    capacity: capacityTimeline(sc.service).map((p) => ({ ...p, perSecond: perSecondOf(p) })),
    phases: result.phases,
    lanes: result.lanes.map((lane) => ({
      name: lane.name,
      description: lane.description,
      goodputRatio: lane.goodputRatio ?? 'n/a',
      totals: lane.totals,
      phases: result.phases.map((p, i) => ({
        fromMs: p.fromMs,
        toMs: p.toMs,
        goodputPerSecond: lane.phaseGoodputPerSecond[i],
        ofCapacity: lane.phaseGoodputPerSecond[i]! / p.capacityPerSecond,
      })),
      tiers: lane.tiers,
    })),
  });
}

/** renderServiceJsonSummary returns {@link serviceSummaryJson} as indented JSON text ending in a newline. */
export function renderServiceJsonSummary(result: ServiceSimulationResult): string {
  return JSON.stringify(serviceSummaryJson(result), null, 2) + '\n';
}
