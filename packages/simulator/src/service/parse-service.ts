import { Fields, invalid } from '../fields.js';
import { parseCommon } from '../parse-scenario.js';
import type { TrafficSpec } from '../scenario.js';
import { parseProtections } from './parse-protection.js';
import type { CapacityStep, RetrySpec, ServiceScenario, ServiceSpec, ServiceTimeSpec, TierSpec } from './spec.js';

const POSITIVE = { min: 0, above: true };
const SLOTS = { min: 1, integer: true, max: 1_000_000 };
/** A lognormal's p99 can be at most e^(z99² / 2) ≈ 14.97 times its mean (where σ = z99). */
export const MAX_LOGNORMAL_P99_RATIO = 14.9;

/**
 * parseServiceScenario returns `value` (parsed JSON or YAML) checked as a {@link ServiceScenario},
 * with every default filled in: the scenario's `seed`, `durationMs`, `bucketMs` and `traffic` as in
 * any scenario, a `service` and the `protections` to compare. It throws a `SimulatorError` with code
 * `INVALID_SCENARIO` whose `field` names the first field at fault (`service.capacity[1].slots`),
 * including unknown fields, and the library's own checks of each protection's options.
 *
 * @example
 * const scenario = parseServiceScenario({
 *   durationMs: 10_000,
 *   traffic: [{ type: 'poisson', ratePerSecond: 2000 }],
 *   service: { slots: 8, serviceMs: 20, timeoutMs: 1000 },
 *   protections: ['none', { concurrency: { limit: 40 } }, { adaptive: { minLimit: 4 } }],
 * });
 */
export function parseServiceScenario(value: unknown): ServiceScenario {
  const f = new Fields(value, '');
  if (f.has('policies'))
    throw invalid(
      'policies',
      'does not apply to a service scenario, which compares protections (none, concurrency, adaptive); rate-limit policies go in a scenario without a service',
    );
  const common = parseCommon(f);
  checkOneCallEach(common.traffic);
  const service = parseService(f.raw('service'), 'service', common.durationMs);
  const protections = parseProtections(f.array('protections', 1), 'protections', service.tiers.length);
  f.done();
  return { ...common, service, protections };
}

function parseService(value: unknown, path: string, durationMs: number): ServiceSpec {
  const f = new Fields(value, path);
  const slots = f.number('slots', SLOTS);
  const serviceMs = parseServiceTime(f.raw('serviceMs'), f.at('serviceMs'));
  const capacity = f.array('capacity').map((step, i) => parseStep(step, `${f.at('capacity')}[${i}]`, durationMs));
  for (let i = 1; i < capacity.length; i++) {
    if (capacity[i]!.atMs <= capacity[i - 1]!.atMs)
      throw invalid(
        `${f.at('capacity')}[${i}].atMs`,
        `must be after the step before (${capacity[i - 1]!.atMs}), got ${capacity[i]!.atMs}`,
      );
  }
  const timeoutMs = f.number('timeoutMs', POSITIVE, 1000);
  const retries = f.has('retries') ? parseRetries(f.raw('retries'), f.at('retries')) : (f.raw('retries') as undefined);
  const tiers = f.has('tiers') ? parseTiers(f.array('tiers', 1), f.at('tiers')) : [{ name: 'all', share: 1 }];
  f.done();
  return { slots, serviceMs, capacity, timeoutMs, retries, tiers };
}

/** A number is a constant service time; an object names its distribution. */
export function parseServiceTime(value: unknown, path: string): ServiceTimeSpec {
  if (typeof value === 'number') {
    if (!(value > 0) || !Number.isFinite(value))
      throw invalid(path, `must be a positive number of ms or { distribution, meanMs, p99Ms? }, got ${value}`);
    return { distribution: 'constant', meanMs: value };
  }
  if (value === undefined)
    throw invalid(
      path,
      'is required: a number of ms, or { distribution: constant | exponential | lognormal, meanMs, p99Ms? }',
    );
  const f = new Fields(value, path);
  const distribution = f.choice('distribution', ['constant', 'exponential', 'lognormal'] as const);
  const meanMs = f.number('meanMs', POSITIVE);
  let spec: ServiceTimeSpec;
  if (distribution === 'lognormal') {
    const p99Ms = f.number('p99Ms', POSITIVE);
    if (p99Ms <= meanMs) throw invalid(f.at('p99Ms'), `must be above meanMs (${meanMs}) for a lognormal, got ${p99Ms}`);
    if (p99Ms > MAX_LOGNORMAL_P99_RATIO * meanMs)
      throw invalid(
        f.at('p99Ms'),
        `must be at most ${MAX_LOGNORMAL_P99_RATIO} × meanMs (${MAX_LOGNORMAL_P99_RATIO * meanMs}) for a lognormal, got ${p99Ms}`,
      );
    spec = { distribution, meanMs, p99Ms };
  } else {
    if (f.has('p99Ms'))
      throw invalid(
        f.at('p99Ms'),
        `applies only to distribution 'lognormal' (the ${distribution} one is set by meanMs alone)`,
      );
    spec = { distribution, meanMs };
  }
  f.done();
  return spec;
}

function parseStep(value: unknown, path: string, durationMs: number): CapacityStep {
  const f = new Fields(value, path);
  const atMs = f.number('atMs', { min: 0 });
  if (atMs >= durationMs) throw invalid(f.at('atMs'), `must be before durationMs (${durationMs}), got ${atMs}`);
  const slots = f.optionalNumber('slots', SLOTS);
  const serviceMs = f.has('serviceMs')
    ? parseServiceTime(f.raw('serviceMs'), f.at('serviceMs'))
    : (f.raw('serviceMs') as undefined);
  f.done();
  if (slots === undefined && serviceMs === undefined) throw invalid(path, 'must change slots, serviceMs or both');
  return { atMs, slots, serviceMs };
}

function parseRetries(value: unknown, path: string): RetrySpec {
  const f = new Fields(value, path);
  const retries: RetrySpec = {
    max: f.number('max', { min: 1, integer: true, max: 10 }),
    backoffMs: f.number('backoffMs', { min: 0 }),
    multiplier: f.number('multiplier', { min: 1, max: 100 }, 2),
    jitterRatio: f.number('jitterRatio', { min: 0, max: 1 }, 0),
  };
  f.done();
  return retries;
}

function parseTiers(list: unknown[], path: string): TierSpec[] {
  if (list.length > 16) throw invalid(path, `must hold at most 16 tiers, got ${list.length}`);
  const tiers = list.map((value, i) => {
    const f = new Fields(value, `${path}[${i}]`);
    const tier = { name: f.string('name', `tier ${i}`), share: f.number('share', { min: 0, above: true, max: 1 }) };
    f.done();
    return tier;
  });
  const total = tiers.reduce((sum, t) => sum + t.share, 0);
  if (Math.abs(total - 1) > 1e-9) throw invalid(path, `shares must add up to 1, got ${Number(total.toFixed(9))}`);
  const names = new Set<string>();
  for (const [i, tier] of tiers.entries()) {
    if (names.has(tier.name))
      throw invalid(`${path}[${i}].name`, `repeats the name ${JSON.stringify(tier.name)}; tier names must be unique`);
    names.add(tier.name);
  }
  return tiers;
}

/** Each arrival is one call to the service: a cost or a spread over keys would mean nothing here. */
function checkOneCallEach(traffic: readonly TrafficSpec[]): void {
  for (const [i, spec] of traffic.entries()) {
    if (spec.type === 'trace') {
      const j = spec.rows.findIndex((row) => row.cost !== undefined && row.cost !== 1);
      if (j >= 0)
        throw invalid(
          `traffic[${i}].rows[${j}].cost`,
          'must be 1 (or absent) in a service scenario: each arrival is one call',
        );
      continue;
    }
    if (spec.cost !== 1)
      throw invalid(`traffic[${i}].cost`, 'must be 1 (or absent) in a service scenario: each arrival is one call');
    if (spec.keys !== undefined)
      throw invalid(`traffic[${i}].keys`, 'does not apply to a service scenario: its calls have no keys');
  }
}
