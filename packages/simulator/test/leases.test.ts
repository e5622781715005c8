/**
 * Leased lanes (`distribution.lease`): each node the library's LeasedTable, on the simulation's
 * manual clock, against one store's ledger a round trip away.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { runFleet } from '../src/engine/leased.js';
import {
  buildAlgorithm,
  generateArrivals,
  parseScenario,
  runLane,
  simulate,
  SimulatorError,
  StateProbe,
  StateRecorder,
  stateReadingOf,
  type Arrivals,
  type LaneResult,
  type LaneSpec,
  type Watch,
} from '../src/index.js';
import type { LimiterPolicySpec } from '../src/policy.js';
import { runs } from '../../floodgate/test/support/sweep.js';

function watchOf(lane: LaneSpec, arrivals: Arrivals): Watch {
  const reading = stateReadingOf(lane.policy);
  const recorder = new StateRecorder({
    keyIds: arrivals.keyIds,
    chartKeyId: 0,
    stepMs: 100,
    fuller: 1,
    keepAll: false,
  });
  return { reading, key: arrivals.keys[0] ?? 'k', probe: new StateProbe(100, 30), recorder };
}

/** Admitted requests of `lane` per node, among those that arrived in [fromMs, toMs). */
function admittedByNode(arrivals: Arrivals, lane: LaneResult, fromMs: number, toMs: number): number[] {
  const counts = new Array<number>(lane.nodes).fill(0);
  for (let i = 0; i < arrivals.length; i++) {
    const at = arrivals.atMs[i]!;
    if (at < fromMs || at >= toMs || Number.isNaN(lane.admittedAtMs[i]!)) continue;
    counts[lane.nodeOf?.[i] ?? i % lane.nodes]!++;
  }
  return counts;
}

/**
 * policiesWithin returns random leasable policies of the fields' values drawn from `r`: as
 * `buckets`, a token and a leaky bucket (capacity from `size`, refill or leak from `perSecond`) and
 * GCRA (`gcraRate` per 1000 ms, `maxBurst`); as `fixedWindow`, a limit from `size` per `windowMs`.
 */
function policiesWithin(r: Record<'size' | 'perSecond' | 'gcraRate' | 'maxBurst' | 'windowMs', fc.Arbitrary<number>>) {
  return {
    buckets: [
      fc.record({ type: fc.constant('token-bucket'), capacity: r.size, refillPerSecond: r.perSecond }),
      fc.record({ type: fc.constant('leaky-bucket'), capacity: r.size, leakPerSecond: r.perSecond }),
      fc.record({ type: fc.constant('gcra'), rate: r.gcraRate, periodMs: fc.constant(1000), maxBurst: r.maxBurst }),
    ],
    fixedWindow: fc.record({ type: fc.constant('fixed-window'), limit: r.size, windowMs: r.windowMs }),
  };
}

// Whole ms and whole half round trips keep the two engines' sums of times exact; GCRA's
// intervals (1000 / rate) are whole ms too.
const small = policiesWithin({
  size: fc.integer({ min: 1, max: 30 }),
  perSecond: fc.integer({ min: 1, max: 300 }),
  gcraRate: fc.constantFrom(1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200),
  maxBurst: fc.integer({ min: 0, max: 20 }),
  windowMs: fc.integer({ min: 10, max: 700 }),
});
const shiftFree = fc.oneof(...small.buckets);
const traceRows = fc
  .array(
    fc.record({
      atMs: fc.integer({ min: 0, max: 1999 }),
      key: fc.constantFrom('a', 'b'),
      cost: fc.constantFrom(1, 1, 1, 2, 40),
    }),
    { maxLength: 250 },
  )
  .map((rows) => rows.sort((x, y) => x.atMs - y.atMs));

describe('leases off: the lease engine decides as the per-request distributed mode', () => {
  it('equals runDistributed on random fleets (buckets and GCRA, any whole round trip; fixed windows with none)', async () => {
    const fleets = fc.oneof(
      fc.record({ policy: shiftFree, halfTripMs: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ policy: small.fixedWindow, halfTripMs: fc.constant(0) }),
    );
    await fc.assert(
      fc.asyncProperty(fleets, fc.integer({ min: 1, max: 4 }), traceRows, async (fleet, nodes, rows) => {
        const scenario = parseScenario({
          durationMs: 2000,
          traffic: [{ type: 'trace', rows }],
          policies: [{ name: 'p', policy: fleet.policy, distribution: { nodes, roundTripMs: 2 * fleet.halfTripMs } }],
        });
        const lane = scenario.policies[0]!;
        const arrivals = generateArrivals(scenario.traffic, scenario.durationMs, scenario.seed);
        const perRequest = await runLane(lane, arrivals, { seed: 1, path: 'p' });
        const algorithm = buildAlgorithm(lane.policy as LimiterPolicySpec, 'p');
        const off = await runFleet(
          arrivals,
          { algorithm, distribution: lane.distribution!, seed: 1 },
          watchOf(lane, arrivals),
        );
        assert.deepEqual([...off.admittedAtMs], [...perRequest.admittedAtMs]);
        assert.deepEqual(
          [...off.nodeOf],
          Array.from({ length: arrivals.length }, (_, i) => i % nodes),
        );
        assert.equal(
          off.fleet.storeOps.reduce((a, b) => a + b, 0),
          [...arrivals.costs].filter((c) => c <= algorithm.limit).length,
          'one store call per request the policy can admit at all',
        );
      }),
      { numRuns: runs(60) },
    );
  });
});

describe('leases: over-admission never above the stated bound', () => {
  it('holds on random fleets, policies, shares, lease lengths, weights and deaths', async () => {
    const large = policiesWithin({
      size: fc.integer({ min: 50, max: 2000 }),
      perSecond: fc.integer({ min: 100, max: 3000 }),
      gcraRate: fc.integer({ min: 100, max: 3000 }),
      maxBurst: fc.integer({ min: 49, max: 1999 }),
      windowMs: fc.integer({ min: 200, max: 1500 }),
    });
    const policy = fc.oneof(...large.buckets, large.fixedWindow);
    const fleet = fc.integer({ min: 1, max: 5 }).chain((nodes) =>
      fc.record({
        nodes: fc.constant(nodes),
        weights: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: nodes, maxLength: nodes }),
        death: fc.option(
          fc.record({ node: fc.integer({ min: 0, max: nodes - 1 }), atMs: fc.integer({ min: 0, max: 1500 }) }),
        ),
        roundTripMs: fc.integer({ min: 0, max: 6 }),
        lease: fc.record({
          leaseMs: fc.integer({ min: 50, max: 1500 }),
          maxOutstandingShare: fc.constantFrom(0.005, 0.02, 0.05, 0.2, 1),
        }),
      }),
    );
    const load = fc.record({
      ratePerSecond: fc.integer({ min: 100, max: 3000 }),
      burst: fc.integer({ min: 1, max: 1000 }),
      burstAtMs: fc.integer({ min: 0, max: 1100 }),
    });
    await fc.assert(
      fc.asyncProperty(policy, fleet, load, fc.integer({ min: 1, max: 1000 }), async (p, f, l, seed) => {
        const deaths = f.death === null || f.nodes === 1 ? [] : [f.death];
        const result = await simulate({
          seed,
          durationMs: 1200,
          traffic: [
            { type: 'poisson', ratePerSecond: l.ratePerSecond },
            { type: 'burst', atMs: l.burstAtMs, count: l.burst, spreadMs: 50 },
          ],
          policies: [
            {
              name: 'leased',
              policy: p,
              distribution: { nodes: f.nodes, roundTripMs: f.roundTripMs, weights: f.weights, deaths, lease: f.lease },
            },
          ],
        });
        const r = result.lanes[0]!.leases!;
        assert.ok(
          r.overAdmitted <= r.boundUnits + 1e-6,
          `over by ${r.overAdmitted}, bound ${r.boundUnits} (${JSON.stringify({ p, f, l, seed })})`,
        );
        assert.ok(r.perRequest.overAdmitted <= 1e-6, `per-request decisions are exact: ${r.perRequest.overAdmitted}`);
      }),
      { numRuns: runs(25) },
    );
  });
});

describe('leases: a node that dies', () => {
  it('holds its units on the ledger until its lease ends; then its share goes to the live nodes', async () => {
    const leaseMs = 2000;
    const result = await simulate({
      durationMs: 5000,
      bucketMs: 100,
      traffic: [{ type: 'constant', ratePerSecond: 3000 }],
      policies: [
        {
          name: 'leased',
          policy: { type: 'token-bucket', capacity: 100_000, refillPerSecond: 1 },
          distribution: {
            nodes: 3,
            roundTripMs: 2,
            lease: { leaseMs, maxOutstandingShare: 0.009 },
            deaths: [{ node: 2, atMs: 1000 }],
          },
        },
      ],
    });
    const r = result.lanes[0]!.leases!;
    assert.equal(r.maxOutstanding, 900);
    const held = (node: number, atMs: number): number => r.heldAtStepEnd[node]![atMs / 100 - 1]!;
    const before = Math.max(held(0, 900), held(1, 900));
    assert.ok(held(2, 1000) > 0, 'the dying node holds units');
    assert.ok(held(0, 900) + held(1, 900) + held(2, 900) <= 900, 'all three together hold at most max out');
    for (let t = 1100; t < 1000 + leaseMs - 100; t += 100)
      assert.equal(held(2, t), held(2, 1000), `at ${t} ms the dead node's units still count`);
    assert.equal(held(2, 1000 + leaseMs), 0, 'its record ended with its lease');
    const after = Math.max(held(0, 4000), held(1, 4000));
    assert.ok(
      after > before + 100,
      `two holders share max out once its record ended (${after} held, ${before} before)`,
    );
    assert.ok(
      Math.max(held(0, 2500), held(1, 2500)) <= 900 - held(2, 1000) + 1e-9,
      'while it counts, the live nodes hold only what it left of max out',
    );
    assert.equal(r.nodes[2]!.diedAtMs, 1000);
    assert.ok(r.nodes[2]!.admitted < r.nodes[0]!.admitted / 2, 'it took no requests after it died');
  });
});

describe('leases: shares follow demand', () => {
  it('one node sending 80%: each node admitted within 5% of its demand-proportional share', async () => {
    const result = await simulate({
      seed: 5,
      durationMs: 3000,
      traffic: [
        // The bucket drained at once, then 1.2 times its rate.
        { type: 'burst', atMs: 0, count: 5000, spreadMs: 0 },
        { type: 'poisson', ratePerSecond: 6000, startMs: 1 },
      ],
      policies: [
        {
          name: 'leased',
          policy: { type: 'token-bucket', capacity: 5000, refillPerSecond: 5000 },
          distribution: { nodes: 3, roundTripMs: 2, weights: [8, 1, 1], lease: {} },
        },
      ],
    });
    const lane = result.lanes[0]!;
    const counts = admittedByNode(result.arrivals, lane, 1000, 3000);
    const total = counts.reduce((a, b) => a + b, 0);
    assert.ok(total > 9500, `the bucket's rate was used: ${total}`);
    const demand = [0.8, 0.1, 0.1];
    counts.forEach((n, node) => {
      const ratio = n / total / demand[node]!;
      assert.ok(Math.abs(ratio - 1) <= 0.05, `node ${node}: ${n} of ${total}, ${ratio.toFixed(3)} of its share`);
    });
  });
});

describe('leases: the scenario', () => {
  const base = {
    durationMs: 1000,
    traffic: [{ type: 'constant', ratePerSecond: 10 }],
  };
  const lane = (distribution: unknown, extra: object = {}): unknown => ({
    ...base,
    policies: [
      { name: 'x', policy: { type: 'token-bucket', capacity: 10, refillPerSecond: 10 }, distribution, ...extra },
    ],
  });
  const cases: Array<[string, unknown, string, RegExp]> = [
    ['bad leaseMs', lane({ nodes: 2, lease: { leaseMs: 0 } }), 'policies[0].distribution.lease.leaseMs', /at least 1/],
    [
      'bad share',
      lane({ nodes: 2, lease: { maxOutstandingShare: 2 } }),
      'policies[0].distribution.lease.maxOutstandingShare',
      /above 0 and at most 1/,
    ],
    [
      'unknown lease field',
      lane({ nodes: 2, lease: { leaseMS: 5 } }),
      'policies[0].distribution.lease.leaseMS',
      /known/,
    ],
    [
      'weights without lease',
      lane({ nodes: 2, weights: [1, 2] }),
      'policies[0].distribution.weights',
      /only with lease/,
    ],
    ['deaths without lease', lane({ nodes: 2, deaths: [] }), 'policies[0].distribution.deaths', /only with lease/],
    [
      'weights per node',
      lane({ nodes: 2, lease: {}, weights: [1] }),
      'policies[0].distribution.weights',
      /one weight per node/,
    ],
    [
      'negative weight',
      lane({ nodes: 2, lease: {}, weights: [1, -1] }),
      'policies[0].distribution.weights[1]',
      /at least 0/,
    ],
    ['no weight', lane({ nodes: 2, lease: {}, weights: [0, 0] }), 'policies[0].distribution.weights', /above 0/],
    [
      'death of a node not there',
      lane({ nodes: 2, lease: {}, deaths: [{ node: 2, atMs: 5 }] }),
      'policies[0].distribution.deaths[0].node',
      /at most 1/,
    ],
    [
      'a node dying twice',
      lane({
        nodes: 3,
        lease: {},
        deaths: [
          { node: 1, atMs: 5 },
          { node: 1, atMs: 9 },
        ],
      }),
      'policies[0].distribution.deaths[1].node',
      /dies once/,
    ],
    [
      'every node dying',
      lane({ nodes: 1, lease: {}, deaths: [{ node: 0, atMs: 5 }] }),
      'policies[0].distribution.deaths',
      /at least one must live/,
    ],
    ['skew', lane({ nodes: 2, lease: {}, maxSkewMs: 5 }), 'policies[0].distribution.maxSkewMs', /store's clock/],
    [
      'outage',
      lane({ nodes: 2, lease: {}, outage: { startMs: 1, endMs: 2, onError: 'fail-open' } }),
      'policies[0].distribution.outage',
      /not simulated with lease/,
    ],
    ['wait mode', lane({ nodes: 2, lease: {} }, { mode: 'wait' }), 'policies[0].distribution.lease', /mode 'wait'/],
    [
      'a sliding window',
      {
        ...base,
        policies: [
          {
            name: 'x',
            policy: { type: 'sliding-window-log', limit: 10, windowMs: 1000 },
            distribution: { nodes: 2, lease: {} },
          },
        ],
      },
      'policies[0].policy.type',
      /cannot be leased.*sliding window/,
    ],
    [
      'a smooth limiter',
      {
        ...base,
        policies: [
          { name: 'x', policy: { type: 'smooth-bursty', permitsPerSecond: 5 }, distribution: { nodes: 2, lease: {} } },
        ],
      },
      'policies[0].distribution.lease',
      /only to a limiter policy/,
    ],
  ];
  for (const [name, scenario, field, message] of cases) {
    it(`refuses ${name}, naming ${field}`, () => {
      assert.throws(
        () => parseScenario(scenario),
        (error: unknown) =>
          error instanceof SimulatorError &&
          error.code === 'INVALID_SCENARIO' &&
          error.field === field &&
          message.test(error.message),
      );
    });
  }

  it('fills in the library defaults: lease: {} is leaseMs 1000 and share 0.02, equal weights, nobody dies', () => {
    const scenario = parseScenario(lane({ nodes: 3, lease: {} }));
    const d = scenario.policies[0]!.distribution!;
    assert.deepEqual(d.lease, { leaseMs: 1000, maxOutstandingShare: 0.02 });
    assert.deepEqual(d.weights, [1, 1, 1]);
    assert.deepEqual(d.deaths, []);
  });
});
