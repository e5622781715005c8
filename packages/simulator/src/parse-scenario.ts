import { Fields, invalid } from './fields.js';
import { parseLane } from './parse-policy.js';
import { parseTraffic } from './parse-traffic.js';
import type { Scenario, TrafficSpec } from './scenario.js';

/** The longest simulated time accepted: 30 days, in ms. */
const MAX_DURATION_MS = 30 * 24 * 3600 * 1000;
/** The most requests a scenario may generate, so that a typo in a rate cannot exhaust memory. */
export const MAX_ARRIVALS = 20_000_000;
/** The most time steps a chart is cut into. */
const MAX_BUCKETS = 5000;

/**
 * parseScenario returns `value` (parsed JSON or YAML) checked as a {@link Scenario}, with every
 * default filled in. It throws a `SimulatorError` with code `INVALID_SCENARIO` whose `field` names
 * the first field at fault (`policies[0].policy.limit`), including unknown fields.
 *
 * @example
 * const scenario = parseScenario({
 *   durationMs: 3000,
 *   traffic: [{ type: 'boundary-burst', boundaryMs: 1000, count: 100 }],
 *   policies: [{ name: 'fixed', policy: { type: 'fixed-window', limit: 100, windowMs: 1000 } }],
 * });
 */
export function parseScenario(value: unknown): Scenario {
  const f = new Fields(value, '');
  if (f.has('service'))
    throw invalid(
      'service',
      'makes this a service scenario, which simulateService runs (floodgate simulate picks it by this field)',
    );
  if (f.has('protections'))
    throw invalid('protections', 'applies only to a service scenario: add a service section, or list policies instead');
  const { seed, durationMs, bucketMs, traffic } = parseCommon(f);
  const policies = f.array('policies', 1).map((p, i) => parseLane(p, `policies[${i}]`));
  const names = new Set<string>();
  for (const [i, lane] of policies.entries()) {
    if (names.has(lane.name))
      throw invalid(`policies[${i}].name`, `repeats the name ${JSON.stringify(lane.name)}; lane names must be unique`);
    names.add(lane.name);
  }
  f.done();
  return { seed, durationMs, bucketMs, traffic, policies };
}

/** The fields every scenario shares: seed, duration, chart step and traffic. */
export interface CommonFields {
  seed: number;
  durationMs: number;
  bucketMs: number;
  traffic: TrafficSpec[];
}

/** parseCommon reads the fields every scenario shares from the top level `f`, checked, with defaults. */
export function parseCommon(f: Fields): CommonFields {
  const seed = f.number('seed', { integer: true, min: 0, max: 2 ** 32 - 1 }, 1);
  const durationMs = f.number('durationMs', { min: 1, max: MAX_DURATION_MS });
  const bucketMs = f.number('bucketMs', { min: 0, above: true }, Math.max(1, Math.round(durationMs / 100)));
  if (durationMs / bucketMs > MAX_BUCKETS)
    throw invalid(
      'bucketMs',
      `cuts durationMs into more than ${MAX_BUCKETS} steps; use at least ${Math.ceil(durationMs / MAX_BUCKETS)}`,
    );
  const traffic = f.array('traffic', 1).map((t, i) => parseTraffic(t, `traffic[${i}]`, durationMs));
  checkArrivalCount(traffic);
  return { seed, durationMs, bucketMs, traffic };
}

/** expectedArrivals returns about how many requests `spec` makes (the mean, for Poisson). */
export function expectedArrivals(spec: TrafficSpec): number {
  switch (spec.type) {
    case 'constant':
    case 'poisson':
      return (spec.ratePerSecond * (spec.endMs - spec.startMs)) / 1000;
    case 'ramp':
      return (((spec.fromPerSecond + spec.toPerSecond) / 2) * (spec.endMs - spec.startMs)) / 1000;
    case 'on-off':
      return ((spec.ratePerSecond * (spec.endMs - spec.startMs)) / 1000) * (spec.onMs / (spec.onMs + spec.offMs));
    case 'burst':
      return spec.count;
    case 'boundary-burst':
      return 2 * spec.count;
    case 'trace':
      return spec.rows.length;
  }
}

function checkArrivalCount(traffic: TrafficSpec[]): void {
  let total = 0;
  for (const [i, spec] of traffic.entries()) {
    total += expectedArrivals(spec);
    if (total > MAX_ARRIVALS) {
      throw invalid(
        `traffic[${i}]`,
        `brings the scenario to about ${Math.round(total)} requests, more than the ${MAX_ARRIVALS} a run may hold; lower the rate or durationMs`,
      );
    }
  }
}
