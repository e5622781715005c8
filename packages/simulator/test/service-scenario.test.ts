import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScenario, parseServiceScenario, SimulatorError } from '../src/index.js';

const traffic = [{ type: 'poisson', ratePerSecond: 100 }];
const service = { slots: 8, serviceMs: 20 };
const base = { durationMs: 10_000, traffic, service, protections: ['none'] };
const tiers = [
  { name: 'critical', share: 0.1 },
  { name: 'normal', share: 0.3 },
  { name: 'batch', share: 0.6 },
];

/** Asserts that parsing `value` throws INVALID_SCENARIO naming `field`, with a message matching `pattern` that names it too. */
function rejects(
  value: unknown,
  field: string,
  pattern: RegExp,
  parse: (v: unknown) => unknown = parseServiceScenario,
): void {
  assert.throws(
    () => parse(value),
    (error: unknown) => {
      assert.ok(error instanceof SimulatorError, `a SimulatorError, got ${String(error)}`);
      assert.equal(error.code, 'INVALID_SCENARIO');
      assert.equal(error.field, field, error.message);
      assert.match(error.message, pattern);
      assert.ok(error.message.includes(field), `the message names ${field}: ${error.message}`);
      return true;
    },
  );
}

const withService = (over: Record<string, unknown>) => ({ ...base, service: { ...service, ...over } });
const withLane = (lane: unknown, over: Record<string, unknown> = {}) => ({ ...withService(over), protections: [lane] });

describe('bad service scenarios', () => {
  it('name the field of the service at fault', () => {
    rejects({ ...base, service: undefined }, 'service', /must be an object/);
    rejects(withService({ slots: 0 }), 'service.slots', /at least 1/);
    rejects(withService({ slots: 2.5 }), 'service.slots', /whole number/);
    rejects(withService({ serviceMs: undefined }), 'service.serviceMs', /is required/);
    rejects(withService({ serviceMs: -5 }), 'service.serviceMs', /positive number of ms/);
    rejects(
      withService({ serviceMs: { distribution: 'gamma', meanMs: 1 } }),
      'service.serviceMs.distribution',
      /one of 'constant', 'exponential', 'lognormal'/,
    );
    rejects(
      withService({ serviceMs: { distribution: 'lognormal', meanMs: 20 } }),
      'service.serviceMs.p99Ms',
      /must be a number/,
    );
    rejects(
      withService({ serviceMs: { distribution: 'lognormal', meanMs: 20, p99Ms: 20 } }),
      'service.serviceMs.p99Ms',
      /above meanMs \(20\)/,
    );
    rejects(
      withService({ serviceMs: { distribution: 'lognormal', meanMs: 20, p99Ms: 400 } }),
      'service.serviceMs.p99Ms',
      /at most 14.9 × meanMs/,
    );
    rejects(
      withService({ serviceMs: { distribution: 'exponential', meanMs: 20, p99Ms: 60 } }),
      'service.serviceMs.p99Ms',
      /only to distribution 'lognormal'/,
    );
    rejects(
      withService({ serviceMs: { distribution: 'constant', mean: 20 } }),
      'service.serviceMs.meanMs',
      /must be a number/,
    );
    rejects(withService({ speed: 3 }), 'service.speed', /not a known field/);
    rejects(withService({ timeoutMs: 0 }), 'service.timeoutMs', /greater than 0/);
  });

  it('name the capacity step at fault', () => {
    rejects(withService({ capacity: [{ atMs: 100 }] }), 'service.capacity[0]', /must change slots, serviceMs or both/);
    rejects(
      withService({ capacity: [{ atMs: 10_000, slots: 2 }] }),
      'service.capacity[0].atMs',
      /before durationMs \(10000\)/,
    );
    rejects(
      withService({
        capacity: [
          { atMs: 500, slots: 2 },
          { atMs: 500, slots: 3 },
        ],
      }),
      'service.capacity[1].atMs',
      /after the step before \(500\)/,
    );
    rejects(withService({ capacity: [{ atMs: 500, slots: 0 }] }), 'service.capacity[0].slots', /at least 1/);
    rejects(
      withService({ capacity: [{ atMs: 500, serviceMs: { distribution: 'exponential' } }] }),
      'service.capacity[0].serviceMs.meanMs',
      /must be a number/,
    );
    rejects(withService({ capacity: [{ atMs: 500, slot: 4 }] }), 'service.capacity[0].slot', /not a known field/);
  });

  it('name the retry and tier fields at fault', () => {
    rejects(withService({ retries: { max: 0, backoffMs: 10 } }), 'service.retries.max', /at least 1/);
    rejects(withService({ retries: { max: 2 } }), 'service.retries.backoffMs', /must be a number/);
    rejects(
      withService({ retries: { max: 2, backoffMs: 10, jitterRatio: 2 } }),
      'service.retries.jitterRatio',
      /at most 1/,
    );
    rejects(
      withService({ retries: { max: 2, backoffMs: 10, multiplier: 0.5 } }),
      'service.retries.multiplier',
      /at least 1/,
    );
    rejects(withService({ tiers: [{ share: 0.5 }, { share: 0.4 }] }), 'service.tiers', /add up to 1, got 0.9/);
    rejects(
      withService({
        tiers: [
          { name: 'a', share: 0.5 },
          { name: 'a', share: 0.5 },
        ],
      }),
      'service.tiers[1].name',
      /unique/,
    );
    rejects(withService({ tiers: [{ share: 0 }, { share: 1 }] }), 'service.tiers[0].share', /greater than 0/);
  });

  it('name the protection at fault, with the library checking its options', () => {
    rejects({ ...base, protections: [] }, 'protections', /at least 1/);
    rejects({ ...base, protections: ['nope'] }, 'protections[0]', /must be 'none' or an object/);
    rejects(withLane({}), 'protections[0]', /exactly one of none, concurrency, adaptive, got none of them/);
    rejects(withLane({ adaptiv: true }), 'protections[0].adaptiv', /not a known field/);
    rejects(withLane({ concurrency: { limit: 4 }, adaptive: true }), 'protections[0]', /got concurrency and adaptive/);
    rejects(withLane({ none: 'yes' }), 'protections[0].none', /must be true/);
    rejects(withLane({ concurrency: { limit: 0 } }), 'protections[0].concurrency.limit', /at least 1/);
    rejects(withLane({ concurrency: { max: 4 } }), 'protections[0].concurrency.limit', /must be a number/);
    rejects(withLane({ adaptive: { minimum: 4 } }), 'protections[0].adaptive.minimum', /not a known field/);
    rejects(withLane({ adaptive: { smoothing: 2 } }), 'protections[0].adaptive.smoothing', /at most 1/);
    rejects(
      withLane({ adaptive: { minLimit: 50, maxLimit: 10 } }),
      'protections[0].adaptive.minLimit',
      /must not be above adaptive.maxLimit/,
    );
    rejects(
      withLane({ adaptive: { initialLimit: 5, minLimit: 10 } }),
      'protections[0].adaptive.initialLimit',
      /between minLimit \(10\)/,
    );
    rejects(withLane({ adaptive: { backoffRatio: 1 } }), 'protections[0].adaptive.backoffRatio', /below 1/);
    rejects(
      withLane({ adaptive: { minSamples: 20, maxSamples: 10 } }),
      'protections[0].adaptive.maxSamples',
      /at least minSamples/,
    );
    rejects(withLane({ name: 'x', none: true, tiers: true }, { tiers }), 'protections[0].tiers', /without protection/);
    rejects(withLane({ adaptive: true, tiers: true }), 'protections[0].tiers', /needs service.tiers/);
    rejects(
      withLane({ adaptive: true, tiers: { reserveRatio: 0.5 } }, { tiers }),
      'protections[0].tiers.reserveRatio',
      /below 1, got 0.5/,
    );
    rejects(
      withLane({ adaptive: true, tiers: { reserve: 0.1 } }, { tiers }),
      'protections[0].tiers.reserveRatio',
      /must be a number/,
    );
    rejects(
      { ...base, protections: ['none', { name: 'none', concurrency: { limit: 4 } }] },
      'protections[1].name',
      /repeats the name "none"/,
    );
    rejects(
      { ...base, protections: [{ adaptive: true }, { adaptive: { minLimit: 4 } }] },
      'protections[1].name',
      /give each lane its own name/,
    );
  });

  it('keep the two kinds of scenario apart, and each arrival one call', () => {
    rejects({ ...base, policies: [] }, 'policies', /compares protections/);
    rejects(
      { ...base, traffic: [{ type: 'poisson', ratePerSecond: 10, cost: 2 }] },
      'traffic[0].cost',
      /each arrival is one call/,
    );
    rejects(
      { ...base, traffic: [{ type: 'poisson', ratePerSecond: 10, keys: { count: 3 } }] },
      'traffic[0].keys',
      /no keys/,
    );
    rejects(
      { ...base, traffic: [{ type: 'trace', rows: [{ atMs: 1 }, { atMs: 2, cost: 3 }] }] },
      'traffic[0].rows[1].cost',
      /one call/,
    );
    rejects({ ...base, durationMs: -1 }, 'durationMs', /at least 1/);
    rejects(base, 'service', /service scenario, which simulateService runs/, parseScenario);
    rejects(
      { durationMs: 10, traffic, protections: ['none'], policies: [] },
      'protections',
      /only to a service scenario/,
      parseScenario,
    );
  });
});

describe('a service scenario', () => {
  it('fills in defaults', () => {
    const s = parseServiceScenario({
      ...base,
      protections: [
        'none',
        { concurrency: { limit: 40 } },
        { adaptive: true },
        { name: 'tiered', adaptive: { minLimit: 4 }, tiers: true },
      ],
      service: { ...service, tiers },
    });
    assert.deepEqual(s.service, {
      slots: 8,
      serviceMs: { distribution: 'constant', meanMs: 20 },
      capacity: [],
      timeoutMs: 1000,
      retries: undefined,
      tiers,
    });
    assert.deepEqual(s.protections, [
      { name: 'none', protection: { type: 'none' }, tiers: undefined },
      { name: 'concurrency 40', protection: { type: 'concurrency', limit: 40 }, tiers: undefined },
      { name: 'adaptive', protection: { type: 'adaptive', options: {} }, tiers: undefined },
      {
        name: 'tiered',
        protection: { type: 'adaptive', options: { minLimit: 4 } },
        tiers: { reserveRatio: undefined },
      },
    ]);
    const untiered = parseServiceScenario(base);
    assert.deepEqual(untiered.service.tiers, [{ name: 'all', share: 1 }]);
    const retried = parseServiceScenario(withService({ retries: { max: 2, backoffMs: 50 } }));
    assert.deepEqual(retried.service.retries, { max: 2, backoffMs: 50, multiplier: 2, jitterRatio: 0 });
  });
});
