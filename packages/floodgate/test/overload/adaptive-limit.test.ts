/**
 * The adaptive estimator against a simulated multi-server service on virtual time: 8 slots of
 * 20 ms (capacity 400 calls/s) behind an unbounded queue that finishes abandoned work, open-loop
 * Poisson clients with a 1 s timeout. Each case names the complaint about a peer it defends.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AdaptiveLimit, ConcurrencyLimiter, FloodgateError, ManualClock } from 'floodgate';
import { percentile, runService, sum, type Phase } from '../support/service-queue.js';
import { sweepCount } from '../support/sweep.js';
import { seeded } from '../waiting/support.js';

const CAPACITY = 400;
const base = (ratePerSecond: number): Phase => ({ fromMs: 0, ratePerSecond, slots: 8, serviceMs: 20 });

function adaptive(options: ConstructorParameters<typeof ConcurrencyLimiter>[0] = { adaptive: true }): {
  clock: ManualClock;
  limiter: ConcurrencyLimiter;
} {
  const clock = new ManualClock(0);
  return { clock, limiter: new ConcurrencyLimiter({ ...options, clock }) };
}

/** Goodput over seconds [from, to) as a fraction of `capacity` calls a second. */
function goodputShare(goodput: readonly number[], from: number, to: number, capacity: number): number {
  return sum(goodput, from, to) / ((to - from) * capacity);
}

/** Service time of a call, from a seeded random source and the phase's mean. */
type ServiceShape = (random: () => number, meanMs: number) => number;
const exponential: ServiceShape = (random, meanMs) => -Math.log(1 - random()) * meanMs;
/** 80% of the calls at half the mean, 20% at three times it: a median well below the mean. */
const bimodal: ServiceShape = (random, meanMs) => (random() < 0.8 ? meanMs / 2 : 3 * meanMs);

/**
 * settle runs 10 s of `overload` times the capacity of `slots` slots of 20 ms (mean), service
 * times from `service` (fixed when none), through an adaptive limit told nothing, and returns the
 * goodput over seconds 2-10 as a share of the capacity, the median of the limits at the ends of
 * those seconds, and the p99 latency of the answers.
 */
function settle(o: { slots: number; overload: number; seed: number; service?: ServiceShape }): {
  goodput: number;
  limit: number;
  limits: number[];
  p99Ms: number;
} {
  const { clock, limiter } = adaptive();
  const capacity = (o.slots * 1000) / 20;
  const random = seeded(o.seed);
  const service = o.service;
  const r = runService({
    clock,
    limiter,
    phases: [{ fromMs: 0, ratePerSecond: o.overload * capacity, slots: o.slots, serviceMs: 20 }],
    durationMs: 10_000,
    seed: o.seed + 1000,
    serviceOf:
      service === undefined
        ? undefined
        : (_, phase) => ({ serviceMs: service(random, phase.serviceMs), outcome: 'success' }),
  });
  const limits = r.limits.slice(2);
  return {
    goodput: goodputShare(r.goodput, 2, 10, capacity),
    limit: percentile(limits, 0.5),
    limits,
    p99Ms: percentile(r.latenciesMs.slice(2).flat(), 0.99),
  };
}

describe('AdaptiveLimit against a simulated service', () => {
  test('without protection the overload collapses goodput: the reference the others beat', () => {
    const clock = new ManualClock(0);
    const r = runService({ clock, limiter: undefined, phases: [base(5 * CAPACITY)], durationMs: 6000 });
    assert.ok(goodputShare(r.goodput, 2, 6, CAPACITY) < 0.05, `goodput ${r.goodput.join(' ')}`);
  });

  for (const overload of [2, 5, 10]) {
    test(`told nothing, at ${overload}x overload: goodput >= 0.95 of capacity, p99 <= 3x unloaded, limit near the 8 slots`, () => {
      const { clock, limiter } = adaptive();
      const r = runService({ clock, limiter, phases: [base(overload * CAPACITY)], durationMs: 10_000 });
      assert.ok(goodputShare(r.goodput, 2, 10, CAPACITY) >= 0.95, `goodput ${r.goodput.join(' ')}`);
      const p99 = percentile(r.latenciesMs.slice(2).flat(), 0.99);
      assert.ok(p99 <= 3 * 20, `p99 ${p99} ms`);
      for (const limit of r.limits.slice(2)) assert.ok(limit >= 8 && limit <= 16, `limits ${r.limits.join(' ')}`);
    });
  }

  for (const overload of [2, 5, 10]) {
    const most = overload === 10 ? 12 : 10;
    test(`told nothing, at ${overload}x overload on a fixed service time: the limit settles at 9-${most} on the 8 slots, goodput >= 0.97, every seed`, () => {
      // One call queued, not √limit (12 before: 3-4 calls always waiting). Swept over seeds 1-120
      // when written: limit 9-10 (10-12 at 10x), goodput at least 0.983, p99 at 2x 27.5-30.4 ms
      // (31.5-34.9 before).
      for (let seed = 1; seed <= 6 * sweepCount(); seed++) {
        const r = settle({ slots: 8, overload, seed });
        assert.ok(r.limit >= 9 && r.limit <= most, `seed ${seed}: limits ${r.limits.join(' ')}`);
        assert.ok(r.goodput >= 0.97, `seed ${seed}: goodput ${r.goodput}`);
        if (overload === 2) assert.ok(r.p99Ms <= 31, `seed ${seed}: p99 ${r.p99Ms} ms`);
      }
    });
  }

  for (const slots of [8, 32, 64]) {
    test(`bimodal service times (80% 10 ms, 20% 60 ms, ${slots} slots) at 5x: goodput >= 0.95, the limit settles within √slots + 2 above the slots, every seed`, () => {
      // The median (10 ms) is precise but moves with a queue more than the mean, so the estimate
      // needs the margin the latency's spread gives it. Swept over seeds 1-120 when written:
      // goodput at least 0.960 / 0.975 / 0.982, limit 10 / 35-37 / 68-73 (as before).
      for (let seed = 1; seed <= 6 * sweepCount(); seed++) {
        const r = settle({ slots, overload: 5, seed, service: bimodal });
        assert.ok(r.goodput >= 0.95, `seed ${seed}: goodput ${r.goodput}`);
        assert.ok(
          r.limit >= slots && r.limit <= slots + Math.sqrt(slots) + 2,
          `seed ${seed}: limits ${r.limits.join(' ')}`,
        );
      }
    });
  }

  // Seeds whose first probe measured a baseline well below the service's median by chance (a
  // cohort of 50 calls of random length): every window then reads as queued and the limit sits
  // under the slots until the next probe, 10 s later. The base estimator has the same trap on
  // these seeds and more (32 slots: 9 seeds of 120 below 0.85, 4 here; 64 slots: 19, 15 here).
  const TRAPPED: Record<number, number[]> = { 8: [], 32: [42], 64: [8, 17, 42, 70, 79] };
  for (const [slots, floor] of [
    [8, 0.8],
    [32, 0.7],
    [64, 0.7],
  ] as const) {
    test(`exponential service times (mean 20 ms, ${slots} slots) at 5x: goodput >= ${floor} and the limit near the slots, every seed but the trapped`, () => {
      // Swept over seeds 1-120 when written: the least goodput 0.816 (8 slots), 0.744 (32), 0.68
      // (64), out of the seeds listed in TRAPPED; the limit 7-15, 22-45, 47-85.
      for (let seed = 1; seed <= 6 * sweepCount(); seed++) {
        if (TRAPPED[slots]!.includes(seed)) continue;
        const r = settle({ slots, overload: 5, seed, service: exponential });
        assert.ok(r.goodput >= floor, `seed ${seed}: goodput ${r.goodput}`);
        assert.ok(r.limit >= slots * 0.6 && r.limit <= slots * 1.4 + 4, `seed ${seed}: limits ${r.limits.join(' ')}`);
      }
    });
  }

  test(
    'exponential service times, the trapped seeds: a baseline that came out low by chance holds the limit under the slots',
    {
      todo: 'a probe of 50 calls of random length can measure a median a fifth low; nothing re-probes sooner than 10 s',
    },
    () => {
      for (const slots of [32, 64])
        for (const seed of TRAPPED[slots]!) {
          const r = settle({ slots, overload: 5, seed, service: exponential });
          assert.ok(r.goodput >= 0.85, `${slots} slots, seed ${seed}: goodput ${r.goodput}`);
        }
    },
  );

  test('no upward drift: a minute at 2x overload with a modest standing queue keeps the limit where it settled', () => {
    const { clock, limiter } = adaptive();
    const r = runService({ clock, limiter, phases: [base(2 * CAPACITY)], durationMs: 60_000 });
    const settled = Math.max(...r.limits.slice(2, 10));
    assert.ok(Math.max(...r.limits.slice(10)) <= settled + 1, `limits ${r.limits.join(' ')}`);
    assert.ok(goodputShare(r.goodput, 2, 60, CAPACITY) >= 0.97);
  });

  test('follows the capacity down when the service slows to half (20 -> 40 ms) and back up', () => {
    const { clock, limiter } = adaptive();
    const phases: Phase[] = [
      base(5 * CAPACITY),
      { ...base(5 * CAPACITY), fromMs: 5000, serviceMs: 40 },
      { ...base(5 * CAPACITY), fromMs: 10_000 },
    ];
    const r = runService({ clock, limiter, phases, durationMs: 15_000 });
    // Within 3 s of the change, goodput is at least 0.85 of the new capacity (200/s); a Vegas
    // estimator with a fixed baseline would starve here, taking the slower service for queueing.
    assert.ok(goodputShare(r.goodput, 5, 8, CAPACITY / 2) >= 0.85, `goodput ${r.goodput.join(' ')}`);
    assert.ok(goodputShare(r.goodput, 12, 15, CAPACITY) >= 0.95, `goodput ${r.goodput.join(' ')}`);
    assert.ok(Math.max(...r.limits.slice(12)) <= 16, `the limit came back near the slots: ${r.limits.join(' ')}`);
  });

  test('follows the slots down (8 -> 4) and up (4 -> 16)', () => {
    const { clock, limiter } = adaptive();
    const phases: Phase[] = [
      base(5 * CAPACITY),
      { ...base(5 * CAPACITY), fromMs: 5000, slots: 4 },
      { ...base(5 * CAPACITY), fromMs: 10_000, slots: 16 },
    ];
    const r = runService({ clock, limiter, phases, durationMs: 15_000 });
    assert.ok(goodputShare(r.goodput, 5, 8, CAPACITY / 2) >= 0.9, `goodput ${r.goodput.join(' ')}`);
    for (const limit of r.limits.slice(6, 10)) assert.ok(limit >= 4 && limit <= 10, `limits ${r.limits.join(' ')}`);
    assert.ok(goodputShare(r.goodput, 11, 15, 2 * CAPACITY) >= 0.9, `goodput ${r.goodput.join(' ')}`);
  });

  test('priorities at 5x overload: the top tier keeps 99% success while the lowest absorbs the shedding', () => {
    const { clock, limiter } = adaptive({ adaptive: true, tiers: 3 });
    // One call in ten is critical, three are default, six are batch.
    const tierOf = (i: number): number => (i % 10 === 0 ? 0 : i % 10 <= 3 ? 1 : 2);
    const r = runService({ clock, limiter, phases: [base(5 * CAPACITY)], durationMs: 10_000, tierOf });
    const [critical, normal, batch] = r.tiers.map((t) => t.good / t.offered) as [number, number, number];
    assert.ok(critical >= 0.99, `critical ${critical}, default ${normal}, batch ${batch}`);
    assert.ok(batch < normal && batch < 0.2, `critical ${critical}, default ${normal}, batch ${batch}`);
    assert.ok(goodputShare(r.goodput, 2, 10, CAPACITY) >= 0.9, `goodput ${r.goodput.join(' ')}`);
  });

  for (const critical of [0.1, 0.2]) {
    const floor = critical === 0.1 ? 0.99 : 0.9;
    test(`priorities at their defaults (3 tiers, no wait line), ${critical * 100}% critical at 5x: the critical tier keeps ${floor * 100}%, every seed`, () => {
      // The room held back for the critical tier follows its demand, and a probe's cut falls on the
      // tiers below. Swept over seeds 1-30 when written (worst: 0.992 and 0.906); FLOODGATE_SWEEP runs more.
      for (let seed = 1; seed <= 6 * sweepCount(); seed++) {
        const { clock, limiter } = adaptive({ adaptive: true, tiers: 3 });
        const random = seeded(seed);
        const tierOf = (): number => {
          const x = random();
          return x < critical ? 0 : x < critical + 0.3 ? 1 : 2;
        };
        const r = runService({ clock, limiter, phases: [base(5 * CAPACITY)], durationMs: 10_000, tierOf, seed });
        const kept = r.tiers[0]!.good / r.tiers[0]!.offered;
        assert.ok(kept >= floor, `seed ${seed}: critical ${kept}`);
        assert.ok(goodputShare(r.goodput, 2, 10, CAPACITY) >= 0.9, `seed ${seed}: goodput ${r.goodput.join(' ')}`);
      }
    });
  }

  test('a small, slow service (2 slots of 50 ms) from a limit ten times too high: the probes bring the limit down', () => {
    const { clock, limiter } = adaptive();
    const r = runService({
      clock,
      limiter,
      phases: [{ fromMs: 0, ratePerSecond: 200, slots: 2, serviceMs: 50 }],
      durationMs: 20_000,
    });
    // A probe that halves a limit of 3 or more still queues on 2 slots, so the baseline here is
    // above 50 ms and the limit keeps a longer queue than on more slots: goodput holds.
    const baseline = limiter.snapshot().adaptive!.baselineRttMs!;
    assert.ok(baseline >= 50 && baseline <= 100, `baseline ${baseline}`);
    assert.ok(goodputShare(r.goodput, 10, 20, 40) >= 0.9, `goodput ${r.goodput.join(' ')}`);
    for (const limit of r.limits.slice(10)) assert.ok(limit >= 2 && limit <= 12, `limits ${r.limits.join(' ')}`);
  });

  for (const slots of [8, 32]) {
    test(`random service times (exponential, mean 20 ms, ${slots} slots) at 5x: goodput >= 0.9, through a halving and back`, () => {
      const { clock, limiter } = adaptive();
      const random = seeded(3);
      const capacity = (slots * 1000) / 20;
      const phases: Phase[] = [
        { fromMs: 0, ratePerSecond: 5 * capacity, slots, serviceMs: 20 },
        { fromMs: 10_000, ratePerSecond: 5 * capacity, slots: slots / 2, serviceMs: 20 },
        { fromMs: 15_000, ratePerSecond: 5 * capacity, slots, serviceMs: 20 },
      ];
      const serviceOf = (_: number, phase: Phase): { serviceMs: number; outcome: 'success' } => ({
        serviceMs: -Math.log(1 - random()) * phase.serviceMs,
        outcome: 'success',
      });
      const r = runService({ clock, limiter, phases, durationMs: 20_000, serviceOf });
      assert.ok(goodputShare(r.goodput, 3, 10, capacity) >= 0.9, `goodput ${r.goodput.join(' ')}`);
      assert.ok(goodputShare(r.goodput, 10, 13, capacity / 2) >= 0.85, `goodput ${r.goodput.join(' ')}`);
      assert.ok(goodputShare(r.goodput, 16, 20, capacity) >= 0.9, `goodput ${r.goodput.join(' ')}`);
    });
  }

  test('respects the floor: a quiet, slow service is never limited below minLimit', () => {
    const { clock, limiter } = adaptive({ adaptive: { minLimit: 6, initialLimit: 6 } });
    const r = runService({
      clock,
      limiter,
      phases: [{ fromMs: 0, ratePerSecond: 5, slots: 1, serviceMs: 150 }],
      durationMs: 20_000,
    });
    for (const limit of r.limits) assert.ok(limit >= 6);
  });

  test('fast health checks do not pull the baseline down: ten percent unmarked, or half marked ignore', () => {
    for (const [every, outcome] of [
      [10, 'success'],
      [2, 'ignore'],
    ] as const) {
      const { clock, limiter } = adaptive();
      const r = runService({
        clock,
        limiter,
        phases: [base(5 * CAPACITY)],
        durationMs: 8000,
        serviceOf: (i, phase) =>
          i % every === 0 ? { serviceMs: 1, outcome } : { serviceMs: phase.serviceMs, outcome: 'success' },
      });
      const baseline = limiter.snapshot().adaptive!.baselineRttMs!;
      assert.ok(baseline >= 19 && baseline <= 24, `baseline ${baseline} (health checks every ${every}, ${outcome})`);
      assert.ok(Math.min(...r.limits.slice(2)) >= 8, `limits ${r.limits.join(' ')}`);
    }
  });
});

describe('AdaptiveLimit, step by step', () => {
  const window = (
    estimator: AdaptiveLimit,
    atMs: number,
    rttMs: number,
    count = 10,
    inFlight = estimator.limit,
  ): void => {
    for (let i = 0; i < count; i++) estimator.record(atMs, { startMs: atMs - rttMs, inFlight, outcome: 'success' });
  };

  test('the first saturated window sets the baseline; a probe at half the limit samples its whole cohort, and the limit returns', () => {
    const estimator = new AdaptiveLimit({ initialLimit: 20, windowMs: 100, minSamples: 2 });
    estimator.saturated(0);
    window(estimator, 99, 50);
    assert.equal(estimator.snapshot().baselineRttMs, undefined, 'a window closes only after windowMs');
    window(estimator, 100, 50);
    assert.equal(estimator.snapshot().baselineRttMs, 50);
    assert.equal(estimator.probing, true);
    const before = estimator.snapshot().estimate;
    assert.equal(estimator.limit, Math.floor(before / 2));
    // Calls sent before the probe end while more than the probe's limit are still in flight: not sampled.
    estimator.record(110, { startMs: 90, inFlight: 20, inFlightAfter: 15, outcome: 'success' });
    // The line drains below the limit at 120: the cohort is what is sent from then on, for 100 ms
    // (twice the baseline) and at least 10 calls (5 x minSamples).
    estimator.record(120, { startMs: 95, inFlight: 20, inFlightAfter: 9, outcome: 'success' });
    for (let i = 0; i < 12; i++) estimator.sent(120 + 10 * i); // 120..210 are the cohort: at 220, 100 ms on with 10 sent, it closes
    // The fast calls end first; the probe waits for the slow one sent last.
    for (let i = 0; i < 9; i++)
      estimator.record(240 + i, { startMs: 120 + 10 * i, inFlight: 9, inFlightAfter: 5, outcome: 'success' });
    assert.equal(estimator.probing, true, 'one cohort call is still out');
    estimator.record(400, { startMs: 220, inFlight: 9, inFlightAfter: 5, outcome: 'success' }); // not a member
    assert.equal(estimator.probing, true);
    estimator.record(500, { startMs: 210, inFlight: 9, inFlightAfter: 5, outcome: 'success' });
    const after = estimator.snapshot();
    assert.equal(after.probing, false);
    // rtts: 120, 111, 102, 93, 84, 75, 66, 57, 48 and 290: the median is 88.5 ms.
    assert.equal(after.baselineRttMs, 88.5);
    assert.equal(after.estimate, before);
    assert.equal(estimator.limit, Math.floor(before));
  });

  test('a first baseline from a window that did not use the limit is probed by the first window that does', () => {
    // At the capacity, a service queues calls well below a limit that is too high: the first
    // window's median (here 50 ms, the service's own being 20) is no baseline until a probe says so.
    const estimator = new AdaptiveLimit({ initialLimit: 20, windowMs: 100, minSamples: 2 });
    estimator.record(0, { startMs: 0, inFlight: 1, outcome: 'ignore' }); // opens the window at 0
    window(estimator, 100, 50, 10, 12);
    assert.equal(estimator.snapshot().baselineRttMs, 50);
    assert.equal(estimator.probing, false, 'a window that did not use the limit calls no probe');
    window(estimator, 150, 50, 1, 12);
    window(estimator, 250, 50, 10, 12);
    assert.equal(estimator.probing, false);
    window(estimator, 300, 50, 1, 12);
    window(estimator, 400, 50, 10, 20);
    assert.equal(estimator.probing, true, 'the first window that used the limit probes the baseline');
    assert.equal(estimator.limit, Math.floor(estimator.snapshot().estimate / 2));
  });

  test('a window with a drop backs the limit off by backoffRatio; fast failures marked ignore change nothing', () => {
    const estimator = new AdaptiveLimit({ initialLimit: 100, windowMs: 100, minSamples: 10, backoffRatio: 0.5 });
    for (let i = 0; i < 50; i++) estimator.record(100 + i, { startMs: 99 + i, inFlight: 1, outcome: 'ignore' });
    assert.equal(estimator.limit, 100);
    estimator.record(200, { startMs: 150, inFlight: 1, outcome: 'drop' });
    assert.equal(estimator.limit, 50);
  });

  test('the limit does not grow from windows in which it was never used', () => {
    const estimator = new AdaptiveLimit({ initialLimit: 10, windowMs: 100, minSamples: 10 });
    estimator.record(0, { startMs: 0, inFlight: 1, outcome: 'ignore' });
    for (let t = 100; t <= 2000; t += 100) window(estimator, t, 20, 10, 2);
    assert.equal(estimator.limit, 10);
  });

  test('calls answered within the clock resolution (a latency of 0) leave the limit a number', () => {
    // A baseline and a median of 0 once made the gradient 0 / 0: a NaN limit that shed everything.
    const estimator = new AdaptiveLimit({ initialLimit: 20, minSamples: 10 });
    for (let i = 0; i < 500; i++)
      estimator.record(Math.floor(i / 50), { startMs: Math.floor(i / 50), inFlight: 20, outcome: 'success' });
    assert.ok(Number.isInteger(estimator.limit) && estimator.limit >= 2, `limit ${estimator.limit}`);
    const { clock, limiter } = adaptive({ adaptive: { initialLimit: 20 } });
    const permits = Array.from({ length: 18 }, () => limiter.tryAcquire());
    for (const p of permits) if (p.allowed) p.release();
    clock.advance(200);
    for (let i = 0; i < 30; i++) {
      const p = limiter.tryAcquire();
      assert.ok(p.allowed, `call ${i} admitted (limit ${limiter.limit})`);
      clock.advance(5);
      p.release();
    }
  });

  test('a clock set back gives no sample', () => {
    const estimator = new AdaptiveLimit({ initialLimit: 10, windowMs: 100, minSamples: 1 });
    estimator.record(100, { startMs: 500, inFlight: 10, outcome: 'success' });
    assert.equal(estimator.snapshot().baselineRttMs, undefined);
  });

  test('bad options are INVALID_OPTION errors naming the option', () => {
    const cases: [object, string][] = [
      [{ minLimit: 10, maxLimit: 5 }, 'adaptive.minLimit'],
      [{ minLimit: 0 }, 'adaptive.minLimit'],
      [{ initialLimit: 1, minLimit: 2 }, 'adaptive.initialLimit'],
      [{ windowMs: 0 }, 'adaptive.windowMs'],
      [{ windowMs: -5 }, 'adaptive.windowMs'],
      [{ smoothing: 0 }, 'adaptive.smoothing'],
      [{ backoffRatio: 1 }, 'adaptive.backoffRatio'],
      [{ queueTarget: -1 }, 'adaptive.queueTarget'],
      [{ minSamples: 20, maxSamples: 10 }, 'adaptive.maxSamples'],
      [{ probeIntervalMs: 0 }, 'adaptive.probeIntervalMs'],
    ];
    for (const [options, option] of cases) {
      assert.throws(
        () => new AdaptiveLimit(options),
        (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === option,
        JSON.stringify(options),
      );
    }
  });
});
