/**
 * A smooth limiter shared by a fleet (`distribution: { shared: true }`): every node reserves on one
 * state per key on the store, so the fleet's admissions are one Guava schedule (1 / rate apart,
 * the burst Guava allows) moved by each request's return trip; the spacing chart draws the gaps
 * between consecutive admissions against 1 / rate.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SmoothRateLimiter } from 'floodgate';
import { renderCharts, simulate, SimulatorError, type LaneResult, type SimulationResult } from '../src/index.js';

function lane(result: SimulationResult, name: string): LaneResult {
  const found = result.lanes.find((l) => l.name === name);
  assert.ok(found, `lane ${name}`);
  return found;
}

function starts(l: LaneResult): number[] {
  return [...l.admittedAtMs].filter((t) => !Number.isNaN(t)).sort((a, b) => a - b);
}

const bursty = { type: 'smooth-bursty', permitsPerSecond: 20, maxBurstSeconds: 0.2 };

describe('a smooth limiter shared by the nodes of a fleet', () => {
  it("gives the fleet one Guava schedule: with no round trip, the one limiter's, whatever the nodes", async () => {
    const result = await simulate({
      seed: 2,
      durationMs: 3000,
      traffic: [{ type: 'poisson', ratePerSecond: 60 }],
      policies: [
        { name: 'one', maxWaitMs: 400, policy: bursty },
        { name: 'shared', maxWaitMs: 400, policy: bursty, distribution: { nodes: 4, shared: true } },
        { name: 'apart', maxWaitMs: 400, policy: bursty, distribution: { nodes: 4 } },
      ],
    });
    assert.deepEqual([...lane(result, 'shared').admittedAtMs], [...lane(result, 'one').admittedAtMs]);
    // The same waits as Guava's limiter fed the arrivals in order (the engine is that limiter).
    const guava = SmoothRateLimiter.bursty(20, {
      maxBurstSeconds: 0.2,
      clock: { now: () => result.arrivals.atMs[0]! },
    });
    const expected = [...result.arrivals.atMs].map((t) => {
      const wait = guava.tryReserveAt(1, 400_000, Math.round(t * 1000));
      return wait === false ? NaN : t + wait / 1000;
    });
    assert.deepEqual([...lane(result, 'shared').admittedAtMs], expected);
    const gaps = (l: LaneResult): number[] => starts(l).map((t, i, all) => (i === 0 ? Infinity : t - all[i - 1]!));
    // Apart, four limiters at a quarter of the rate each: their admissions come closer than 1 / rate.
    assert.ok(gaps(lane(result, 'apart')).filter((g) => g < 50 - 1e-6).length > 20);
    assert.match(lane(result, 'shared').description, /4 nodes sharing one limiter on the store/);
  });

  it("spaces the fleet's admissions by 1 / rate with Guava's burst, the return trip's jitter apart", async () => {
    const jitterMs = 4;
    const result = await simulate({
      seed: 5,
      durationMs: 4000,
      traffic: [{ type: 'constant', ratePerSecond: 100 }],
      policies: [
        {
          name: 'shared',
          maxWaitMs: 1000,
          policy: bursty,
          distribution: { nodes: 4, shared: true, roundTripMs: 2, roundTripJitterMs: jitterMs },
        },
      ],
    });
    const at = starts(lane(result, 'shared'));
    const intervalMs = 50;
    const maxStored = 20 * 0.2;
    // Guava's promise between any two starts, with the return half of the round trip's jitter.
    for (let i = 0; i < at.length; i++)
      for (let j = i + 1; j < Math.min(at.length, i + 40); j++)
        assert.ok(j - i + 1 <= maxStored + (at[j]! - at[i]! + jitterMs / 2) / intervalMs + 1 + 1e-9, `${i}..${j}`);
    // Busy from the start (demand at 5x the rate): one start per interval, each within the jitter.
    for (let k = 1; k < at.length; k++) assert.ok(Math.abs(at[k]! - at[k - 1]! - intervalMs) <= jitterMs / 2 + 1e-6);
  });

  it('decides by the outage policy while the store is out, on each node alone', async () => {
    const outage = { startMs: 1000, endMs: 2000 };
    const result = await simulate({
      durationMs: 3000,
      traffic: [{ type: 'constant', ratePerSecond: 100 }],
      policies: [
        {
          name: 'local',
          maxWaitMs: 1000,
          policy: bursty,
          distribution: { nodes: 4, shared: true, outage: { ...outage, onError: 'local' } },
        },
        {
          name: 'closed',
          maxWaitMs: 1000,
          policy: bursty,
          distribution: { nodes: 4, shared: true, outage: { ...outage, onError: 'fail-closed', timeoutMs: 10 } },
        },
      ],
    });
    // Admitted among the requests that arrived while the store was out (those reserved before it
    // still start meanwhile: their turns were the store's answer).
    const during = (name: string): number =>
      [...lane(result, name).admittedAtMs].filter((t, i) => {
        const arrived = result.arrivals.atMs[i]!;
        return !Number.isNaN(t) && arrived >= outage.startMs && arrived < outage.endMs;
      }).length;
    assert.equal(during('closed'), 0);
    // Four nodes, each at a quarter of the rate for the outage's second, waiting up to 1 s: about
    // the rate's worth as a whole, and their backlog's (each node's first is free).
    assert.ok(during('local') >= 20 && during('local') <= 44, `${during('local')}`);
    // Each node alone: its own limiter at a quarter of the rate (5/s), fresh, so one start per 200 ms.
    const local = lane(result, 'local').admittedAtMs;
    for (let node = 0; node < 4; node++) {
      const mine: number[] = [];
      for (let i = node; i < local.length; i += 4) {
        const arrived = result.arrivals.atMs[i]!;
        if (!Number.isNaN(local[i]!) && arrived >= outage.startMs && arrived < outage.endMs) mine.push(local[i]!);
      }
      mine.sort((a, b) => a - b);
      for (let k = 1; k < mine.length; k++) assert.ok(mine[k]! - mine[k - 1]! >= 200 - 1e-6, `node ${node}`);
    }
  });

  it('draws the spacing of admissions against 1 / rate, for smooth lanes only', async () => {
    const result = await simulate({
      durationMs: 2000,
      bucketMs: 100,
      traffic: [{ type: 'constant', ratePerSecond: 100 }],
      policies: [
        { name: 'shared', maxWaitMs: 1000, policy: bursty, distribution: { nodes: 2, shared: true } },
        { name: 'counted', policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 20 } },
      ],
    });
    const spacing = renderCharts(result).find((c) => c.id === 'spacing');
    assert.ok(spacing, 'a spacing chart');
    assert.match(spacing.svg, /dashed: 1 \/ rate/);
    assert.match(spacing.svg, /shared/);
    assert.doesNotMatch(spacing.svg, /counted/);
    const plain = await simulate({
      durationMs: 1000,
      traffic: [{ type: 'constant', ratePerSecond: 10 }],
      policies: [{ name: 'counted', policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 20 } }],
    });
    assert.equal(
      renderCharts(plain).find((c) => c.id === 'spacing'),
      undefined,
    );
  });

  it("refuses `shared` where it means nothing, and a skew on the store's clock", async () => {
    const cases: [object, string, RegExp][] = [
      [
        { policy: { type: 'shaping-queue', intervalMs: 10, capacity: 5 }, distribution: { nodes: 2, shared: true } },
        'policies[0].distribution.shared',
        /applies only to smooth policies/,
      ],
      [
        { policy: bursty, distribution: { nodes: 2, shared: 'yes' } },
        'policies[0].distribution.shared',
        /true or false/,
      ],
      [
        { policy: bursty, distribution: { nodes: 2, shared: true, maxSkewMs: 5 } },
        'policies[0].distribution.maxSkewMs',
        /store's clock/,
      ],
      [
        { policy: bursty, distribution: { nodes: 2, shared: true, share: 0.5 } },
        'policies[0].distribution.share',
        /an outage has its own share/,
      ],
    ];
    for (const [laneFields, field, message] of cases)
      await assert.rejects(
        simulate({
          durationMs: 1000,
          traffic: [{ type: 'constant', ratePerSecond: 10 }],
          policies: [{ name: 'x', ...laneFields }],
        }),
        (error: unknown) => error instanceof SimulatorError && error.field === field && message.test(error.message),
        field,
      );
  });
});
