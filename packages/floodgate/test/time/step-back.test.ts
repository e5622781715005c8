import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SmoothRateLimiter } from '../../src/index.js';
import { assertWithinBound } from '../support/bounds.js';
import { build, policyKinds, type PolicySpec } from '../support/policies.js';
import { excessOf, Random, runShared, seedsFrom, type NodeClock } from './clocks.js';
import { specOf, streamOf } from './streams.js';

// One process whose wall clock steps back (NTP) by up to 1 s, once or a few times: on the real
// timeline every policy must keep exactly the promise it keeps on a correct clock, no extra at all.
// Seeds that once found a failure, kept as fixed cases: 1414598521 and 4157989838 (see below).
const seeds = seedsFrom([1414598521, 4157989838]);
const TRIALS = 40;
const ONE_CLOCK = { minOffsetMs: 0, maxOffsetMs: 0 };

function steppingBack(random: Random, endMs: number): NodeClock {
  const steps = Array.from({ length: random.int(1, 3) }, () => ({
    atMs: random.between(0, endMs),
    byMs: -random.between(1, 1000),
  }));
  return { offsetMs: 0, steps };
}

/** Whether `spec` counts in aligned windows of its clock (rather than in spans of real time). */
function isWindowed(spec: PolicySpec): boolean {
  return spec.kind === 'fixedWindow' || spec.kind === 'weighted' || spec.kind === 'subWindows';
}

for (const seed of seeds) {
  describe(`one process, its clock stepping back up to 1 s (seed ${seed})`, () => {
    for (const kind of policyKinds) {
      test(`${kind}: no more than a correct clock promises`, () => {
        const random = new Random(seed ^ (kind.length * 104_729));
        for (let trial = 0; trial < TRIALS; trial++) {
          const spec = specOf(kind, random);
          const requests = streamOf(spec, random, {
            startMs: random.pick([0, 1_700_000_000_000]),
            count: 300,
            nodes: 1,
            reserves: true,
          });
          const endMs = requests[requests.length - 1]!.realMs - requests[0]!.realMs;
          const clock = steppingBack(random, endMs);
          const stepped = { ...clock, steps: clock.steps.map((s) => ({ ...s, atMs: s.atMs + requests[0]!.realMs })) };
          const admitted = runShared(build(spec), [stepped], requests);
          const context = `trial ${trial}: ${JSON.stringify(spec)}, steps ${JSON.stringify(clock.steps)} (FLOODGATE_TIME_SEED=${seed})`;
          if (isWindowed(spec)) {
            // Windows are the process clock's: each keeps its limit, counted where the policy records
            // a request made behind it (the newest window already charged).
            const run = admitted.map((a) => ({ atMs: a.clockMs, cost: a.cost, allowed: true }));
            assert.doesNotThrow(() => assertWithinBound(spec, run), context);
          } else {
            const { excess, where } = excessOf(spec, admitted, ONE_CLOCK);
            assert.ok(excess <= 0, `${context}: ${where}, ${excess.toFixed(3)} beyond a correct clock's promise`);
          }
          // No total over the stream is compared with a correct clock's: a step back makes a policy
          // refuse a request a correct clock admits and admit a later one instead, after which the two
          // runs choose different requests and their totals may differ either way, every span of real
          // time within the promise all the same (checked above). Seeds that showed it: 1414598521
          // (slidingWindowLog, trial 8: 86 against 84) and 4157989838 (gcra, trial 32: 81 against 80).
        }
      });
    }

    test('smooth limiters (Guava): no permit starts earlier than on a correct clock', () => {
      const random = new Random(seed ^ 0x5eed);
      for (let trial = 0; trial < TRIALS; trial++) {
        const rate = random.pick([1, 5, 50]);
        const warm = random.next() < 0.5;
        const correct = warm
          ? SmoothRateLimiter.warmingUp(rate, 1000)
          : SmoothRateLimiter.bursty(rate, { maxBurstSeconds: 2 });
        const skewed = warm
          ? SmoothRateLimiter.warmingUp(rate, 1000)
          : SmoothRateLimiter.bursty(rate, { maxBurstSeconds: 2 });
        const clock = steppingBack(random, 20_000);
        let realMicros = 0;
        for (let i = 0; i < 200; i++) {
          realMicros += Math.round(random.between(0, 2e6 / rate));
          const permits = random.int(1, 3);
          const steppedMicros =
            realMicros +
            Math.round(clock.steps.filter((s) => realMicros >= s.atMs * 1000).reduce((o, s) => o + s.byMs, 0) * 1000);
          const startCorrect = realMicros + correct.reserveAt(permits, realMicros);
          const startStepped = realMicros + skewed.reserveAt(permits, steppedMicros);
          assert.ok(
            startStepped >= startCorrect,
            `trial ${trial} request ${i}: starts at ${startStepped} µs, ${startCorrect} µs on a correct clock (FLOODGATE_TIME_SEED=${seed})`,
          );
        }
      }
    });
  });
}
