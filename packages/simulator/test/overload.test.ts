import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { simulateService, type ServiceLaneResult, type ServiceSimulationResult } from '../src/index.js';

// The shipped scenario: 8 slots × 20 ms (400 answers a second), offered 2000 a second from 2 s to
// 16 s, the slots halved from 8 s to 12 s, in steps of 250 ms.
const SCENARIO = parse(readFileSync(new URL('../scenarios/overload.yaml', import.meta.url), 'utf8')) as Record<
  string,
  unknown
>;
const CAPACITY = 400;

let result: ServiceSimulationResult;
before(() => {
  result = simulateService(SCENARIO);
});

function lane(name: string): ServiceLaneResult {
  const found = result.lanes.find((l) => l.name === name);
  assert.ok(found, `lane ${name}`);
  return found;
}

/** The steps of [fromMs, toMs). */
function stepsOf(fromMs: number, toMs: number): number[] {
  const bucketMs = result.scenario.bucketMs;
  return Array.from({ length: (toMs - fromMs) / bucketMs }, (_, i) => fromMs / bucketMs + i);
}

function sumOver(values: Float64Array, fromMs: number, toMs: number): number {
  return stepsOf(fromMs, toMs).reduce((n, s) => n + values[s]!, 0);
}

/** Answers within the timeout per second over [fromMs, toMs), by the time of the answer. */
function goodputPerSecond(l: ServiceLaneResult, fromMs: number, toMs: number): number {
  return (sumOver(l.series.goodput, fromMs, toMs) * 1000) / (toMs - fromMs);
}

/** The share of tier `t`'s requests made in [fromMs, toMs) that were answered in time. */
function successOf(l: ServiceLaneResult, t: number, fromMs: number, toMs: number): number {
  const tier = l.series.tiers[t]!;
  return sumOver(tier.succeeded, fromMs, toMs) / sumOver(tier.requests, fromMs, toMs);
}

/** The median over [fromMs, toMs) of the per-step median latency of tier `t`. */
function typicalP50(l: ServiceLaneResult, t: number, fromMs: number, toMs: number): number {
  const values = stepsOf(fromMs, toMs)
    .map((s) => l.series.tiers[t]!.p50Ms[s]!)
    .filter((v) => !Number.isNaN(v))
    .sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)]!;
}

describe('the overload scenario', () => {
  it('offers five times the capacity, then halves the capacity and restores it', () => {
    assert.deepEqual(
      result.phases.map((p) => [p.fromMs, p.toMs, p.capacityPerSecond]),
      [
        [0, 2000, 400],
        [2000, 8000, 400],
        [8000, 12000, 200],
        [12000, 16000, 400],
        [16000, 20000, 400],
      ],
    );
    const offered = result.phases[1]!.offeredPerSecond / CAPACITY;
    assert.ok(offered > 4.8 && offered < 5.2, `offered ${offered} × capacity`);
  });

  it('collapses without protection: the backlog of abandoned work leaves nearly no goodput', () => {
    const none = lane('none');
    assert.ok(
      goodputPerSecond(none, 4000, 20_000) <= 0.01 * CAPACITY,
      `goodput ${goodputPerSecond(none, 4000, 20_000)}/s`,
    );
    assert.ok(none.totals.peakBacklog > 10_000, `backlog ${none.totals.peakBacklog}`);
    // From 4 s to 20 s the service can answer 400 × 12 + 200 × 4 calls: nearly all go to clients that left.
    assert.ok(
      none.totals.wasted >= 0.9 * (CAPACITY * 12 + (CAPACITY / 2) * 4),
      `answers nobody waited for: ${none.totals.wasted}`,
    );
    assert.ok(none.goodputRatio! < 0.15, `goodput ratio ${none.goodputRatio}`);
    assert.equal(typicalP50(none, 0, 4000, 16_000), 1000, 'every admitted call waits for the whole timeout');
  });

  it('keeps the adaptive lane near capacity at 5x, and within 3 s of the capacity halving', () => {
    const adaptive = lane('adaptive');
    const at5x = goodputPerSecond(adaptive, 3000, 8000);
    assert.ok(at5x >= 0.9 * CAPACITY, `goodput at 5x: ${at5x}/s`);
    const halved = goodputPerSecond(adaptive, 8000, 11_000);
    assert.ok(halved >= 0.85 * (CAPACITY / 2), `goodput in the 3 s after halving: ${halved}/s`);
    const recovered = goodputPerSecond(adaptive, 13_000, 16_000);
    assert.ok(recovered >= 0.9 * CAPACITY, `goodput after the recovery: ${recovered}/s`);
    assert.ok(adaptive.goodputRatio! >= 0.9, `goodput ratio ${adaptive.goodputRatio}`);
    assert.equal(adaptive.totals.timedOut, 0);
    const limit = sumOver(adaptive.series.levels.limit, 9000, 12_000) / stepsOf(9000, 12_000).length;
    assert.ok(limit < 10, `the limit followed the capacity down: ${limit}`);
  });

  it('keeps the fixed limit at capacity too, at the price of a queue that doubles in time when the capacity halves', () => {
    const fixed = lane('concurrency 40');
    assert.ok(goodputPerSecond(fixed, 3000, 8000) >= 0.95 * CAPACITY);
    assert.ok(goodputPerSecond(fixed, 8000, 11_000) >= 0.95 * (CAPACITY / 2));
    assert.equal(fixed.totals.timedOut, 0);
    const inFlight = sumOver(fixed.series.levels.inFlight, 3000, 8000) / stepsOf(3000, 8000).length;
    assert.ok(inFlight > 39 && inFlight <= 40, `in flight ${inFlight}`);
    // 40 in flight over 400/s is 100 ms; over 200/s, 200 ms. The adaptive limit keeps latency near the service time.
    const [full, half] = [typicalP50(fixed, 2, 3000, 8000), typicalP50(fixed, 2, 9000, 12_000)];
    assert.ok(full > 80 && full < 120, `p50 at full capacity ${full} ms`);
    assert.ok(half > 160 && half < 240, `p50 at half capacity ${half} ms`);
    assert.ok(typicalP50(lane('adaptive'), 2, 9000, 12_000) < half / 3);
  });

  it('lets the tiered lane answer the top tier at 5x while the lowest tier absorbs the shedding', () => {
    const tiered = lane('adaptive, tiered');
    const [critical, normal, batch] = [0, 1, 2].map((t) => successOf(tiered, t, 3000, 8000));
    assert.ok(critical! >= 0.99, `critical ${critical}`);
    assert.ok(batch! < 0.05 && normal! > batch! && critical! > normal!, `normal ${normal}, batch ${batch}`);
    const shed = [0, 1, 2].map((t) => sumOver(tiered.series.tiers[t]!.shed, 3000, 8000));
    assert.ok(shed[2]! / (shed[0]! + shed[1]! + shed[2]!) > 0.8, `batch's share of the shedding: ${shed}`);
    // Without tiers, every tier is shed alike.
    const flat = [0, 2].map((t) => successOf(lane('adaptive'), t, 3000, 8000));
    assert.ok(Math.abs(flat[0]! - flat[1]!) < 0.05 && flat[0]! < 0.3, `untiered: ${flat}`);
  });

  it('serves the top tier under a tiered fixed limit too', () => {
    const service = { ...(SCENARIO.service as object), capacity: [] };
    const fixed = simulateService({
      ...SCENARIO,
      durationMs: 8000,
      service,
      protections: [{ concurrency: { limit: 40 }, tiers: { reserveRatio: 0.3 } }],
    }).lanes[0]!;
    const critical = fixed.series.tiers[0]!;
    assert.ok(sumOver(critical.succeeded, 3000, 8000) / sumOver(critical.requests, 3000, 8000) >= 0.99);
    assert.ok(fixed.tiers[2]!.successRatio < 0.3);
  });

  it('gives the same result twice', () => {
    assert.deepEqual(simulateService(SCENARIO), result);
  });
});
