import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { simulate, type PolicySpec } from '../src/index.js';

// Issue 20: a token bucket on a store shared by 3 nodes whose clocks differ by +-50 ms admitted
// nearly all the traffic offered. Every policy, limit 100 per 10 s, Poisson traffic at 3x the rate:
// the skewed lane's busiest 10 s stays within its bound of the same lane on one clock.
const limit = 100;
const windowMs = 10_000;
const policies: ReadonlyArray<{ spec: PolicySpec; boundShare: number }> = [
  { spec: { type: 'token-bucket', capacity: limit, refillPerSecond: 10 }, boundShare: 0.01 },
  { spec: { type: 'leaky-bucket', capacity: limit, leakPerSecond: 10 }, boundShare: 0.01 },
  { spec: { type: 'gcra', rate: limit, periodMs: windowMs, maxBurst: limit - 1 }, boundShare: 0.01 },
  // Windows open (and log entries leave) up to the 100 ms spread early, then admit what is
  // offered: 30 per second here, so about 3% of the limit.
  { spec: { type: 'fixed-window', limit, windowMs }, boundShare: 0.03 },
  { spec: { type: 'sliding-window-log', limit, windowMs }, boundShare: 0.03 },
  { spec: { type: 'sliding-window-counter', limit, windowMs, subWindows: undefined }, boundShare: 0.03 },
  { spec: { type: 'sliding-window-counter', limit, windowMs, subWindows: 10 }, boundShare: 0.03 },
];

describe('3 nodes with clocks at -50, 0 and +50 ms on one store', () => {
  it('over-admit no more than the bound of each policy', async () => {
    const result = await simulate({
      seed: 5,
      durationMs: 12 * windowMs,
      traffic: [{ type: 'poisson', ratePerSecond: 30 }],
      policies: policies.flatMap(({ spec }, i) => [
        { name: `${i} one clock`, policy: spec, distribution: { nodes: 3, skewMs: [0, 0, 0] } },
        { name: `${i} skewed`, policy: spec, distribution: { nodes: 3, skewMs: [-50, 0, 50] } },
      ]),
    });
    for (const [i, { spec, boundShare }] of policies.entries()) {
      const one = result.lanes[2 * i]!.score;
      const skewed = result.lanes[2 * i + 1]!.score;
      const over = (skewed.maxInWindow - one.maxInWindow) / limit;
      assert.ok(
        over <= boundShare,
        `${spec.type}: busiest window ${skewed.maxInWindow} vs ${one.maxInWindow} on one clock`,
      );
      assert.ok(
        skewed.admitted <= one.admitted + boundShare * limit,
        `${spec.type}: ${skewed.admitted} admitted vs ${one.admitted}`,
      );
    }
  });
});
