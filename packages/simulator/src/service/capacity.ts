import type { Arrivals } from '../arrivals.js';
import type { TrafficSpec } from '../scenario.js';
import type { ServiceSpec } from './spec.js';

/** CapacityPeriod is the service's shape from `fromMs` until the next period. */
export interface CapacityPeriod {
  readonly fromMs: number;
  readonly slots: number;
  /** Mean service time, in ms. */
  readonly meanMs: number;
}

/** capacityTimeline returns the service's periods in time order: its start shape, then one per capacity step. */
export function capacityTimeline(service: ServiceSpec): CapacityPeriod[] {
  const periods: CapacityPeriod[] = [{ fromMs: 0, slots: service.slots, meanMs: service.serviceMs.meanMs }];
  for (const step of service.capacity) {
    const last = periods[periods.length - 1]!;
    const period = {
      fromMs: step.atMs,
      slots: step.slots ?? last.slots,
      meanMs: step.serviceMs?.meanMs ?? last.meanMs,
    };
    if (step.atMs === last.fromMs) periods[periods.length - 1] = period;
    else periods.push(period);
  }
  return periods;
}

/** perSecondOf returns the calls a period's service answers per second at most: slots × 1000 / mean service time. */
export function perSecondOf(period: CapacityPeriod): number {
  return (period.slots * 1000) / period.meanMs;
}

/**
 * meanOver returns the time-weighted mean of `value` of the periods over [fromMs, toMs) (the
 * value at `fromMs` when the span is empty).
 */
export function meanOver(
  timeline: readonly CapacityPeriod[],
  fromMs: number,
  toMs: number,
  value: (p: CapacityPeriod) => number,
): number {
  let total = 0;
  let at = fromMs;
  for (let i = 0; i < timeline.length; i++) {
    const endMs = i + 1 < timeline.length ? timeline[i + 1]!.fromMs : Infinity;
    if (endMs <= fromMs) continue;
    if (toMs <= fromMs) return value(timeline[i]!);
    const spanEndMs = Math.min(endMs, toMs);
    total += value(timeline[i]!) * (spanEndMs - at);
    at = spanEndMs;
    if (at >= toMs) break;
  }
  return total / (toMs - fromMs);
}

/** ServicePhase is a stretch of a run with one offered rate and one capacity, for the summary. */
export interface ServicePhase {
  readonly fromMs: number;
  readonly toMs: number;
  /** The most the service could answer per second in this phase (time-weighted). */
  readonly capacityPerSecond: number;
  /** Requests sent per second in this phase (first attempts). */
  readonly offeredPerSecond: number;
}

/**
 * phasesOf returns the run cut at every capacity step and at the start and end of every rate
 * source (constant, Poisson, ramp, on-off): stretches over which offered load and capacity can be
 * compared.
 */
export function phasesOf(
  traffic: readonly TrafficSpec[],
  timeline: readonly CapacityPeriod[],
  arrivals: Arrivals,
  durationMs: number,
): ServicePhase[] {
  const cuts = new Set<number>([0, durationMs]);
  for (const period of timeline) cuts.add(period.fromMs);
  for (const spec of traffic) {
    if (spec.type === 'constant' || spec.type === 'poisson' || spec.type === 'ramp' || spec.type === 'on-off') {
      cuts.add(spec.startMs);
      cuts.add(spec.endMs);
    }
  }
  const points = [...cuts].filter((ms) => ms >= 0 && ms <= durationMs).sort((a, b) => a - b);
  const phases: ServicePhase[] = [];
  let next = 0;
  for (let p = 0; p + 1 < points.length; p++) {
    const [fromMs, toMs] = [points[p]!, points[p + 1]!];
    let offered = 0;
    for (; next < arrivals.length && arrivals.atMs[next]! < toMs; next++) offered++;
    const capacityPerSecond = meanOver(timeline, fromMs, toMs, perSecondOf);
    phases.push({ fromMs, toMs, capacityPerSecond, offeredPerSecond: (offered * 1000) / (toMs - fromMs) });
  }
  return phases;
}
