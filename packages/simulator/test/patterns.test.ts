import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  maxInAnyWindow,
  promiseOf,
  scoreLane,
  simulate,
  type PolicySpec,
  type SimulationResult,
} from '../src/index.js';

const limit = 100;
const fixed: PolicySpec = { type: 'fixed-window', limit, windowMs: 1000 };
const log: PolicySpec = { type: 'sliding-window-log', limit, windowMs: 1000 };

function lane(result: SimulationResult, name: string) {
  const found = result.lanes.find((l) => l.name === name);
  assert.ok(found, `lane ${name}`);
  return found;
}

/** The admissions of a lane's hottest key, in time order, as the oracle sees them. */
function timelineOf(result: SimulationResult, name: string) {
  const l = lane(result, name);
  return scoreLane(result.arrivals, l.admittedAtMs, l.promise).hottest;
}

describe('the boundary burst', () => {
  it('lets the fixed window admit twice its limit across a boundary, and never the sliding log', async () => {
    const result = await simulate({
      durationMs: 3000,
      traffic: [{ type: 'boundary-burst', boundaryMs: 1000, count: limit }],
      policies: [
        { name: 'fixed', policy: fixed },
        { name: 'log', policy: log },
      ],
    });
    assert.equal(result.arrivals.length, 2 * limit);
    const f = lane(result, 'fixed').score;
    assert.equal(f.admitted, 2 * limit);
    assert.equal(f.maxInWindow, 2 * limit);
    assert.equal(f.overPromise, 0, 'twice the limit is what a fixed window promises');
    const l = lane(result, 'log').score;
    assert.equal(l.admitted, limit);
    assert.equal(l.maxInWindow, limit);
    assert.equal(l.overPromise, 0);
    assert.equal(l.wronglyRefused, 0);
  });

  it('keeps the sliding log at its limit in every window, and the fixed window within 2x, under heavy random load', async () => {
    for (const seed of [1, 2, 3]) {
      const result = await simulate({
        seed,
        durationMs: 10_000,
        traffic: [
          { type: 'poisson', ratePerSecond: 400 },
          { type: 'boundary-burst', boundaryMs: 5000, count: 150 },
        ],
        policies: [
          { name: 'fixed', policy: fixed },
          { name: 'log', policy: log },
        ],
      });
      const f = lane(result, 'fixed').score;
      assert.ok(
        f.maxInWindow > limit && f.maxInWindow <= 2 * limit,
        `seed ${seed}: fixed window peak ${f.maxInWindow}`,
      );
      assert.equal(f.overPromise, 0);
      const l = lane(result, 'log').score;
      assert.equal(l.maxInWindow, limit, `seed ${seed}`);
      assert.equal(l.overPromise, 0);
      assert.equal(l.wronglyRefused, 0, 'the log refuses only a full window');
      for (const windowMs of [1000, 999, 500]) assert.ok(maxInAnyWindow(timelineOf(result, 'log'), windowMs) <= limit);
    }
  });
});

describe('the sliding window counter', () => {
  it('stays within twice its limit; its weighted estimate refuses some requests an exact window would admit, its sub-windows none', async () => {
    const result = await simulate({
      durationMs: 4000,
      traffic: [
        { type: 'boundary-burst', boundaryMs: 1000, count: limit },
        { type: 'constant', ratePerSecond: 150, startMs: 1500 },
      ],
      policies: [
        { name: 'weighted', policy: { type: 'sliding-window-counter', limit, windowMs: 1000 } },
        { name: 'sub-windows', policy: { type: 'sliding-window-counter', limit, windowMs: 1000, subWindows: 10 } },
      ],
    });
    for (const name of ['weighted', 'sub-windows']) {
      const score = lane(result, name).score;
      assert.ok(score.maxInWindow <= 2 * limit, `${name}: ${score.maxInWindow}`);
      assert.equal(score.overPromise, 0);
    }
    assert.ok(
      lane(result, 'weighted').score.wronglyRefused! > 0,
      'the weighted estimate counts some of the previous window that has left',
    );
    // The counted sub-windows lie inside the trailing window: a refusal means that window is full.
    assert.equal(lane(result, 'sub-windows').score.wronglyRefused, 0);
  });
});

describe('rate policies', () => {
  const policies: Array<{ name: string; policy: PolicySpec; burst: number; perMs: number }> = [
    { name: 'gcra', policy: { type: 'gcra', rate: 50, periodMs: 1000, maxBurst: 9 }, burst: 10, perMs: 0.05 },
    {
      name: 'token bucket',
      policy: { type: 'token-bucket', capacity: 10, refillPerSecond: 50 },
      burst: 10,
      perMs: 0.05,
    },
    { name: 'leaky bucket', policy: { type: 'leaky-bucket', capacity: 10, leakPerSecond: 50 }, burst: 10, perMs: 0.05 },
  ];

  it('never admit more than their burst plus rate x t, in any window t, refused or waiting', async () => {
    for (const seed of [5, 6]) {
      const result = await simulate({
        seed,
        durationMs: 8000,
        traffic: [
          { type: 'poisson', ratePerSecond: 120 },
          { type: 'burst', atMs: 3000, count: 60 },
          { type: 'on-off', ratePerSecond: 300, onMs: 200, offMs: 800 },
        ],
        policies: [
          ...policies.map((p) => ({ name: p.name, policy: p.policy })),
          ...policies.map((p) => ({ name: `${p.name} wait`, mode: 'wait', maxWaitMs: 300, policy: p.policy })),
        ],
      });
      for (const p of policies) {
        for (const name of [p.name, `${p.name} wait`]) {
          const timeline = timelineOf(result, name);
          assert.ok(timeline.atMs.length > 100, `${name} admitted ${timeline.atMs.length}`);
          for (const windowMs of [1, 10, 50, 200, 1000, 5000]) {
            const max = maxInAnyWindow(timeline, windowMs);
            assert.ok(
              max <= p.burst + p.perMs * windowMs + 1e-9,
              `seed ${seed} ${name}: ${max} in ${windowMs} ms > ${p.burst} + ${p.perMs * windowMs}`,
            );
          }
          assert.equal(lane(result, name).score.overPromise, 0);
        }
        assert.equal(lane(result, p.name).score.wronglyRefused, 0, `${p.name} refuses only an empty bucket`);
      }
    }
  });

  it('waits no longer than maxWaitMs and admits more than refusing does', async () => {
    const result = await simulate({
      durationMs: 5000,
      traffic: [
        { type: 'poisson', ratePerSecond: 70 },
        { type: 'burst', atMs: 1000, count: 40 },
      ],
      policies: [
        { name: 'refuse', policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 60 } },
        {
          name: 'wait',
          mode: 'wait',
          maxWaitMs: 250,
          policy: { type: 'token-bucket', capacity: 5, refillPerSecond: 60 },
        },
        {
          name: 'window wait',
          mode: 'wait',
          maxWaitMs: 250,
          policy: { type: 'fixed-window', limit: 6, windowMs: 100 },
        },
      ],
    });
    const refuse = lane(result, 'refuse').score;
    for (const name of ['wait', 'window wait']) {
      const wait = lane(result, name).score;
      assert.ok(wait.waitMs.max <= 250 && wait.waitMs.max > 0, `${name}: longest wait ${wait.waitMs.max}`);
      assert.ok(wait.refused > 0, `${name}: the burst outruns a 250 ms wait`);
      assert.equal(wait.overPromise, 0);
    }
    assert.ok(lane(result, 'wait').score.admitted > refuse.admitted, 'waiting turns refusals into admissions');
    assert.equal(refuse.waitMs.max, 0);
  });
});

describe('wait mode', () => {
  it('stamps each admission with the virtual time the limiter let it through', async () => {
    const result = await simulate({
      durationMs: 100,
      traffic: [{ type: 'burst', atMs: 0, count: 25 }],
      policies: [
        { name: 'bucket', mode: 'wait', policy: { type: 'token-bucket', capacity: 10, refillPerSecond: 10 } },
        { name: 'window', mode: 'wait', policy: { type: 'fixed-window', limit: 10, windowMs: 1000 } },
        {
          name: 'window, 1.5 s',
          mode: 'wait',
          maxWaitMs: 1500,
          policy: { type: 'fixed-window', limit: 10, windowMs: 1000 },
        },
      ],
    });
    const at = (name: string) => [...lane(result, name).admittedAtMs];
    const tenAtZero = Array.from({ length: 10 }, () => 0);
    assert.deepEqual(at('bucket'), [...tenAtZero, ...Array.from({ length: 15 }, (_, i) => 100 * (i + 1))]);
    assert.deepEqual(at('window'), [
      ...tenAtZero,
      ...Array.from({ length: 10 }, () => 1000),
      ...Array.from({ length: 5 }, () => 2000),
    ]);
    assert.deepEqual(at('window, 1.5 s'), [
      ...tenAtZero,
      ...Array.from({ length: 10 }, () => 1000),
      ...Array.from({ length: 5 }, () => NaN),
    ]);
    assert.deepEqual(lane(result, 'bucket').score.waitMs, { p50: 300, p90: 1300, p99: 1500, max: 1500 });
  });
});

describe('shaping and warm-up', () => {
  it("keeps the shaping queue's outflow flat within 1% while a backlog lasts", async () => {
    const intervalMs = 7.5;
    const result = await simulate({
      durationMs: 6000,
      traffic: [
        { type: 'burst', atMs: 0, count: 400 },
        { type: 'poisson', ratePerSecond: 200 },
      ],
      policies: [{ name: 'shape', policy: { type: 'shaping-queue', intervalMs, capacity: 2000 } }],
    });
    const out = timelineOf(result, 'shape').atMs;
    assert.equal(lane(result, 'shape').score.refused, 0);
    const ratePerSecond = 1000 / intervalMs;
    // 400 queued plus 200/s in, 133.3/s out: the backlog lasts the whole run.
    for (let second = 0; second < 6; second++) {
      const count = out.filter((t) => t >= second * 1000 && t < (second + 1) * 1000).length;
      assert.ok(
        Math.abs(count - ratePerSecond) <= 0.01 * ratePerSecond,
        `second ${second}: ${count} out, expected ${ratePerSecond.toFixed(2)} ± 1%`,
      );
    }
    for (let i = 1; i < out.length; i++)
      assert.ok(out[i]! - out[i - 1]! >= intervalMs - 1 && out[i]! - out[i - 1]! <= intervalMs + 1, `gap ${i}`);
  });

  it("shows the warming-up limiter's ramp: slow from cold, then its stable rate", async () => {
    const result = await simulate({
      durationMs: 8000,
      traffic: [{ type: 'constant', ratePerSecond: 400 }],
      policies: [
        { name: 'warm', maxWaitMs: 0, policy: { type: 'smooth-warming-up', permitsPerSecond: 100, warmupMs: 3000 } },
        { name: 'bursty', maxWaitMs: 0, policy: { type: 'smooth-bursty', permitsPerSecond: 100 } },
      ],
    });
    const perSecond = (name: string) => {
      const t = timelineOf(result, name).atMs;
      return Array.from({ length: 8 }, (_, s) => t.filter((x) => x >= s * 1000 && x < (s + 1) * 1000).length);
    };
    const warm = perSecond('warm');
    const bursty = perSecond('bursty');
    assert.ok(warm[0]! < 0.6 * 100, `cold first second: ${warm[0]}`);
    assert.ok(warm[0]! < warm[1]! && warm[1]! < warm[2]!, `ramps up: ${warm.join(',')}`);
    for (const s of [5, 6, 7]) assert.ok(Math.abs(warm[s]! - 100) <= 1, `warm at second ${s}: ${warm[s]}`);
    for (const s of [1, 4, 7]) assert.ok(Math.abs(bursty[s]! - 100) <= 1, `bursty at second ${s}: ${bursty[s]}`);
  });
});

describe('distribution', () => {
  const policy: PolicySpec = { type: 'sliding-window-log', limit: 60, windowMs: 1000 };
  const outage = { startMs: 2000, endMs: 4000 };

  it('shows what each way of deciding during a store outage costs', async () => {
    const result = await simulate({
      durationMs: 6000,
      traffic: [{ type: 'constant', ratePerSecond: 300 }],
      policies: [
        { name: 'shared', policy, distribution: { nodes: 3, roundTripMs: 2 } },
        {
          name: 'fail-open',
          policy,
          distribution: { nodes: 3, roundTripMs: 2, outage: { ...outage, onError: 'fail-open' } },
        },
        {
          name: 'fail-closed',
          policy,
          distribution: { nodes: 3, roundTripMs: 2, outage: { ...outage, onError: 'fail-closed' } },
        },
        {
          name: 'local third',
          policy,
          distribution: { nodes: 3, roundTripMs: 2, outage: { ...outage, onError: 'local' } },
        },
        {
          name: 'local full',
          policy,
          distribution: { nodes: 3, roundTripMs: 2, outage: { ...outage, onError: 'local', share: 1 } },
        },
      ],
    });
    const score = (name: string) => lane(result, name).score;
    assert.equal(score('shared').overPromise, 0);
    assert.equal(score('shared').wronglyRefused, 0);
    assert.equal(score('shared').waitMs.p50, 2, 'every request waits the round trip');
    assert.ok(score('fail-open').overPromise > 400, `fail-open: ${score('fail-open').overPromise}`);
    assert.ok(score('local full').overPromise > 100, `3 nodes x the full limit: ${score('local full').overPromise}`);
    assert.ok(score('local full').maxInWindow >= 150, `local full peak ${score('local full').maxInWindow}`);
    // Three thirds make one limit; only the shared admissions still in flight when the store went
    // away (one round trip's worth) overlap the fresh local windows.
    assert.ok(score('local third').maxInWindow <= 62, `local third peak ${score('local third').maxInWindow}`);
    assert.ok(score('local third').overPromise <= 2, `local third over ${score('local third').overPromise}`);
    assert.ok(
      score('fail-closed').wronglyRefused! > 100,
      `fail-closed wrongly refused ${score('fail-closed').wronglyRefused}`,
    );
  });

  it('shows what clock skew between nodes costs a window policy', async () => {
    const run = (maxSkewMs: number) =>
      simulate({
        durationMs: 6000,
        traffic: [{ type: 'constant', ratePerSecond: 300 }],
        policies: [
          {
            name: 'fixed',
            policy: { type: 'fixed-window', limit: 60, windowMs: 1000 },
            distribution: { nodes: 3, maxSkewMs },
          },
        ],
      });
    const aligned = (await run(0)).lanes[0]!.score;
    const skewed = (await run(300)).lanes[0]!.score;
    assert.equal(aligned.admitted, 6 * 60);
    assert.ok(skewed.admitted > aligned.admitted, `skewed clocks see more windows: ${skewed.admitted}`);
    assert.ok(skewed.maxInWindow > aligned.maxInWindow, `${skewed.maxInWindow} > ${aligned.maxInWindow}`);
  });
});

describe('promises', () => {
  it('are stated per policy', () => {
    assert.deepEqual(promiseOf(fixed), { windowMs: 1000, maxAdmitted: 200, guaranteed: 100, limit: 100 });
    assert.deepEqual(promiseOf(log), { windowMs: 1000, maxAdmitted: 100, guaranteed: 100, limit: 100 });
    assert.deepEqual(promiseOf({ type: 'gcra', rate: 10, periodMs: 1000, maxBurst: 4 }), {
      windowMs: 500,
      maxAdmitted: 10,
      guaranteed: 5,
      limit: 5,
    });
  });
});
