import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderCharts, simulate, type LaneResult, type SimulationResult } from '../src/index.js';

function lane(result: SimulationResult, name: string): LaneResult {
  const found = result.lanes.find((l) => l.name === name);
  assert.ok(found, `lane ${name}`);
  return found;
}

const states = (l: LaneResult): number[] => [...l.stateAfter!];

describe("each lane's algorithm state, as the library reports it", () => {
  it('reads tokens left, a window count resetting, water rising and GCRA running ahead', async () => {
    const result = await simulate(
      {
        durationMs: 3000,
        bucketMs: 100,
        traffic: [
          { type: 'burst', atMs: 500, count: 7 },
          { type: 'burst', atMs: 1000, count: 3 },
        ],
        policies: [
          { name: 'bucket', policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 10 } },
          { name: 'fixed', policy: { type: 'fixed-window', limit: 5, windowMs: 1000 } },
          { name: 'leaky', policy: { type: 'leaky-bucket', capacity: 5, leakPerSecond: 10 } },
          { name: 'gcra', policy: { type: 'gcra', rate: 10, periodMs: 1000, maxBurst: 4 } },
        ],
      },
      { keepStates: true },
    );
    // 5 tokens, 7 requests at once: 4, 3, 2, 1, 0 left, then refusals leave 0; 500 ms later 5 are back.
    assert.deepEqual(states(lane(result, 'bucket')), [4, 3, 2, 1, 0, 0, 0, 5 - 1, 5 - 2, 5 - 3]);
    // The window's count climbs to its limit, and a new window at 1000 ms starts again from 0.
    assert.deepEqual(states(lane(result, 'fixed')), [1, 2, 3, 4, 5, 5, 5, 1, 2, 3]);
    assert.deepEqual(states(lane(result, 'leaky')), [1, 2, 3, 4, 5, 5, 5, 1, 2, 3]);
    // GCRA: each admission pushes the theoretical arrival time one interval (100 ms) ahead of now.
    assert.deepEqual(states(lane(result, 'gcra')), [100, 200, 300, 400, 500, 500, 500, 100, 200, 300]);
    assert.equal(lane(result, 'gcra').reading.bound, 500);
    // Per chart step, the fullest state: the bucket's emptiest, refilled by the step ends in between.
    const bucket = lane(result, 'bucket').series.state;
    assert.equal(bucket[5], 0, 'the step of the burst at 500 ms');
    assert.equal(bucket[8], 4, 'refilling: 4 tokens back by 900 ms');
    assert.equal(bucket[10], 2, 'the step of the second burst');
    assert.equal(bucket[29], 5, 'full again at the end');
    const fixed = lane(result, 'fixed').series.state;
    assert.equal(fixed[5], 5);
    assert.equal(fixed[8], 5, 'the window holds its count until it ends');
    assert.equal(fixed[9], 0, 'at the end of the step up to 1000 ms, a new window has begun');
    assert.equal(fixed[10], 3);
    assert.equal(fixed[20], 0, 'and resets to 0 when a window passes unused');
  });

  it('reads a waiting bucket in debt below 0, and draws the axis below 0', async () => {
    const result = await simulate({
      durationMs: 2000,
      bucketMs: 100,
      traffic: [{ type: 'burst', atMs: 0, count: 10 }],
      policies: [
        {
          name: 'bucket',
          mode: 'wait',
          maxWaitMs: 1000,
          policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 10 },
        },
      ],
    });
    // Ten reserved at once from five tokens: five owed, paid back at 10 a second.
    const state = lane(result, 'bucket').series.state;
    assert.equal(state[0], -5);
    assert.equal(state[4], -1, 'by 500 ms, four of the five owed are paid back');
    assert.equal(state[19], 5);
    const chart = renderCharts(result).find((c) => c.id === 'state-1')!.svg;
    assert.match(chart, />-\d+<\/text><\/g>/, 'a tick below 0');
  });

  it('reads the requests waiting in a shaping queue', async () => {
    const result = await simulate(
      {
        durationMs: 1000,
        traffic: [{ type: 'burst', atMs: 0, count: 4 }],
        policies: [{ name: 'queue', policy: { type: 'shaping-queue', intervalMs: 100, capacity: 2 } }],
      },
      { keepStates: true },
    );
    const queue = lane(result, 'queue');
    assert.deepEqual(states(queue), [0, 1, 2, 2]);
    assert.deepEqual([...queue.admittedAtMs], [0, 100, 200, NaN]);
  });
});
