import { Fields, invalid } from './fields.js';
import { parseLane } from './parse-policy.js';
import { parseTraffic } from './parse-traffic.js';
import type { Scenario } from './scenario.js';

/** The longest simulated time accepted: 30 days, in ms. */
const MAX_DURATION_MS = 30 * 24 * 3600 * 1000;
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
  const seed = f.number('seed', { integer: true, min: 0, max: 2 ** 32 - 1 }, 1);
  const durationMs = f.number('durationMs', { min: 1, max: MAX_DURATION_MS });
  const bucketMs = f.number('bucketMs', { min: 0, above: true }, Math.max(1, Math.round(durationMs / 100)));
  if (durationMs / bucketMs > MAX_BUCKETS) throw invalid('bucketMs', `cuts durationMs into more than ${MAX_BUCKETS} steps; use at least ${Math.ceil(durationMs / MAX_BUCKETS)}`);
  const traffic = f.array('traffic', 1).map((t, i) => parseTraffic(t, `traffic[${i}]`, durationMs));
  const policies = f.array('policies', 1).map((p, i) => parseLane(p, `policies[${i}]`));
  const names = new Set<string>();
  for (const [i, lane] of policies.entries()) {
    if (names.has(lane.name)) throw invalid(`policies[${i}].name`, `repeats the name ${JSON.stringify(lane.name)}; lane names must be unique`);
    names.add(lane.name);
  }
  f.done();
  return { seed, durationMs, bucketMs, traffic, policies };
}
