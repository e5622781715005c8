import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { build, limitOf, scaleMs, type PolicySpec } from '../support/policies.js';
import { maxInSpan, Random, runShared, type NodeClock, type Request } from './clocks.js';

// The measurement of issue 20: 3 nodes at -50, 0 and +50 ms (a 100 ms spread) on one key, Poisson
// traffic at 3x the policy's rate for 12 windows, every request through the next node in turn.
// Over-admission = the most admitted in any real span of the policy's window, minus the same with
// every node on one clock, as a share of the limit. docs/time.md shows these figures.
const SKEWED: NodeClock[] = [-50, 0, 50].map((offsetMs) => ({ offsetMs, steps: [] }));
const ALIGNED: NodeClock[] = [0, 0, 0].map((offsetMs) => ({ offsetMs, steps: [] }));
const SPREAD_MS = 100;

function policies(limit: number, windowMs: number): PolicySpec[] {
  const perSecond = (limit * 1000) / windowMs;
  return [
    { kind: 'tokenBucket', capacity: limit, perSecond },
    { kind: 'leakyBucket', capacity: limit, perSecond },
    { kind: 'gcra', rate: limit, periodMs: windowMs, maxBurst: limit - 1 },
    { kind: 'fixedWindow', limit, windowMs },
    { kind: 'slidingWindowLog', limit, windowMs },
    { kind: 'weighted', limit, windowMs },
    { kind: 'subWindows', limit, windowMs, subWindows: 10 },
  ];
}

function poisson(spec: PolicySpec, seed: number): Request[] {
  const random = new Random(seed);
  const meanGapMs = scaleMs(spec) / (3 * limitOf(spec));
  const requests: Request[] = [];
  let realMs = 1_700_000_000_000;
  for (let i = 0; i < 36 * limitOf(spec); i++) {
    realMs += -Math.log(1 - random.next()) * meanGapMs;
    requests.push({ realMs, node: i % 3, cost: 1 });
  }
  return requests;
}

const RATE_KINDS: ReadonlySet<string> = new Set(['tokenBucket', 'leakyBucket', 'gcra']);

/**
 * measure returns, over a few streams, the worst over-admission as a share of the limit and the
 * bound stated for it: buckets and GCRA refill up to the spread early, `limit x spread / window`
 * (rounded up to a whole request); window policies and the log open a window (or let entries
 * leave) up to the spread early and then admit what is offered, so at most what arrives within one
 * spread (at 3x the policy's rate: about 3 x limit x spread / window, more where arrivals clump).
 */
function measure(spec: PolicySpec): { share: number; bound: number } {
  const limit = limitOf(spec);
  const windowMs = scaleMs(spec);
  let share = 0;
  let bound = 0;
  for (const seed of [1, 2, 3]) {
    const requests = poisson(spec, seed);
    const skewed = maxInSpan(runShared(build(spec), SKEWED, requests), windowMs);
    const aligned = maxInSpan(runShared(build(spec), ALIGNED, requests), windowMs);
    share = Math.max(share, (skewed - aligned) / limit);
    const offered = requests.map((r) => ({ realMs: r.realMs, cost: r.cost, clockMs: r.realMs }));
    const extra = RATE_KINDS.has(spec.kind)
      ? Math.ceil((limit * SPREAD_MS) / windowMs - 1e-9)
      : maxInSpan(offered, SPREAD_MS);
    bound = Math.max(bound, extra / limit);
  }
  return { share, bound };
}

describe('over-admission with 3 nodes at +-50 ms, limit 100, offered 3x the rate', () => {
  const rows: ReadonlyArray<{ windowMs: number; what: string; claim?: { share: number; windows: boolean } }> = [
    { windowMs: 1000, what: '1 s windows: within the bounds (10% of the limit for buckets and GCRA)' },
    { windowMs: 10_000, what: '10 s windows: at most 1% for buckets and GCRA', claim: { share: 0.01, windows: false } },
    {
      windowMs: 30_000,
      what: '30 s windows: at most 1% for buckets, GCRA and windows',
      claim: { share: 0.01, windows: true },
    },
  ];
  for (const { windowMs, what, claim } of rows) {
    test(what, (t) => {
      for (const spec of policies(100, windowMs)) {
        const { share, bound } = measure(spec);
        t.diagnostic(`${spec.kind}: ${(share * 100).toFixed(1)}% of the limit (bound ${(bound * 100).toFixed(1)}%)`);
        assert.ok(share <= bound + 1e-9, `${spec.kind}: ${share} of the limit, bound ${bound}`);
        const windowed = !RATE_KINDS.has(spec.kind) && spec.kind !== 'slidingWindowLog';
        if (claim !== undefined && (RATE_KINDS.has(spec.kind) || (claim.windows && windowed))) {
          assert.ok(share <= claim.share + 1e-9, `${spec.kind}: ${share} > ${claim.share}`);
        }
      }
    });
  }
});
