import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { simulate, SimulatorError, type LaneResult, type SimulationResult } from '../src/index.js';

function lane(result: SimulationResult, name: string): LaneResult {
  const found = result.lanes.find((l) => l.name === name);
  assert.ok(found, `lane ${name}`);
  return found;
}

const traffic = [
  { type: 'poisson', ratePerSecond: 300, keys: { count: 4, zipfExponent: 1 } },
  { type: 'burst', atMs: 1000, count: 200, spreadMs: 100 },
];

describe('distributed lanes in every mode', () => {
  it('waits on each node against the shared store, a round trip away', async () => {
    const policy = { type: 'token-bucket', capacity: 20, refillPerSecond: 100 };
    const result = await simulate({
      seed: 3,
      durationMs: 3000,
      traffic,
      policies: [
        { name: 'alone', mode: 'wait', maxWaitMs: 300, policy },
        { name: 'one node', mode: 'wait', maxWaitMs: 300, policy, distribution: { nodes: 1 } },
        { name: 'three', mode: 'wait', maxWaitMs: 300, policy, distribution: { nodes: 3, roundTripMs: 20 } },
        {
          name: 'outage',
          mode: 'wait',
          maxWaitMs: 300,
          policy,
          distribution: { nodes: 3, roundTripMs: 20, outage: { startMs: 1500, endMs: 2500, onError: 'local' } },
        },
      ],
    });
    assert.deepEqual(
      [...lane(result, 'one node').admittedAtMs],
      [...lane(result, 'alone').admittedAtMs],
      'one node on true time with no round trip decides as the lane without a distribution',
    );
    const three = lane(result, 'three');
    assert.equal(three.nodes, 3);
    assert.equal(three.score.overPromise, 0, 'one store, no skew: the promise holds');
    assert.ok(three.score.waitMs.p50 >= 20, `every admission waits at least the round trip: ${three.score.waitMs.p50}`);
    assert.ok(three.score.waitMs.max > 100, `and some wait in the queue too: ${three.score.waitMs.max}`);
    assert.ok(three.score.waitMs.max <= 300 + 20 + 1e-6, `no longer than maxWaitMs plus the round trip`);
    const outage = lane(result, 'outage');
    let admittedInOutage = 0;
    for (let i = 0; i < result.arrivals.length; i++) {
      const at = result.arrivals.atMs[i]!;
      if (at >= 1600 && at < 2400 && !Number.isNaN(outage.admittedAtMs[i]!)) admittedInOutage++;
    }
    assert.ok(admittedInOutage > 50, `the nodes' local limiters admit while the store is out: ${admittedInOutage}`);
  });

  it('shapes on each node at its share of the rate', async () => {
    const policy = { type: 'shaping-queue', intervalMs: 10, capacity: 50 };
    const result = await simulate({
      durationMs: 3000,
      traffic: [{ type: 'constant', ratePerSecond: 400 }],
      policies: [
        { name: 'one', policy },
        { name: 'two', policy, distribution: { nodes: 2 } },
      ],
    });
    const two = lane(result, 'two');
    for (const node of [0, 1]) {
      const starts = [...two.admittedAtMs].filter((at, i) => i % 2 === node && !Number.isNaN(at)).sort((a, b) => a - b);
      for (let k = 1; k < starts.length; k++)
        assert.ok(starts[k]! - starts[k - 1]! >= 20 - 1e-9, `node ${node}: half the rate, one start per 20 ms`);
    }
    // The same outflow as one queue; each node's own queue holds `capacity` more at the end.
    assert.equal(two.score.admitted, lane(result, 'one').score.admitted + 50);
    assert.match(two.description, /2 nodes, each its own at share 0.5 of the rate/);
  });

  it("warms up on each node at its share of Guava's rate", async () => {
    const policy = { type: 'smooth-warming-up', permitsPerSecond: 100, warmupMs: 1000 };
    const result = await simulate({
      durationMs: 4000,
      traffic: [{ type: 'constant', ratePerSecond: 300 }],
      policies: [
        { name: 'one', maxWaitMs: 0, policy },
        { name: 'four', maxWaitMs: 0, policy, distribution: { nodes: 4 } },
        { name: 'four full', maxWaitMs: 0, policy, distribution: { nodes: 4, share: 1 } },
      ],
    });
    const admitted = (name: string) => lane(result, name).score.admitted;
    assert.ok(Math.abs(admitted('four') - admitted('one')) <= 8, `${admitted('four')} vs ${admitted('one')}`);
    // Each node at the full rate sees a quarter of the load: they admit more than one, though each
    // limiter, used below its rate, stays cold (Guava's warm-up spends stored permits only when busy).
    assert.ok(admitted('four full') > admitted('one') + 50, `${admitted('four full')} vs ${admitted('one')}`);
  });

  it('refuses store settings for policies that live in one process', async () => {
    await assert.rejects(
      simulate({
        durationMs: 1000,
        traffic: [{ type: 'constant', ratePerSecond: 10 }],
        policies: [
          {
            name: 'q',
            policy: { type: 'shaping-queue', intervalMs: 10, capacity: 5 },
            distribution: { nodes: 2, roundTripMs: 3 },
          },
        ],
      }),
      (error: unknown) =>
        error instanceof SimulatorError &&
        error.field === 'policies[0].distribution.roundTripMs' &&
        /applies only to a limiter policy on a shared store/.test(error.message),
    );
  });
});
