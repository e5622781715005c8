import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { build, policyKinds, type PolicySpec } from '../support/policies.js';
import { excessOf, Random, runShared, seedsFrom, spreadOf, type NodeClock } from './clocks.js';
import { skewedNodes, specOf, streamOf } from './streams.js';

// Many nodes sharing one key's state, each on its own clock: what every policy promises on the
// real timeline, with the skew between the clocks as the only slack (see excessOf).
// Seeds that once failed, kept as fixed cases: 2876897688 (gcra, trial 39 of the stepping case:
// float rounding at epoch times, 3e-6 beyond a bound that allowed for none; see roundingMs).
const seeds = seedsFrom([2876897688]);
const TRIALS = 40;
const BASES = [0, 1_700_000_000_000];

function check(spec: PolicySpec, nodes: readonly NodeClock[], random: Random, what: string, seed: number): void {
  const startMs = random.pick(BASES);
  const requests = streamOf(spec, random, { startMs, count: 300, nodes: nodes.length, reserves: true });
  const spread = spreadOf(nodes);
  const { excess, where } = excessOf(spec, runShared(build(spec), nodes, requests), spread);
  assert.ok(
    excess <= 0,
    `${what}: ${JSON.stringify(spec)}, offsets ${spread.minOffsetMs.toFixed(1)}..${spread.maxOffsetMs.toFixed(1)} ms: ${where}, ${excess.toFixed(3)} beyond the bound (FLOODGATE_TIME_SEED=${seed})`,
  );
}

for (const seed of seeds) {
  describe(`every policy, 3 to 5 nodes on one state (seed ${seed})`, () => {
    for (const kind of policyKinds) {
      test(`${kind}: clocks within +-50 ms`, () => {
        const random = new Random(seed ^ kind.length);
        for (let trial = 0; trial < TRIALS; trial++)
          check(specOf(kind, random), skewedNodes(random, 50), random, `trial ${trial}`, seed);
      });

      test(`${kind}: clocks within +-50 ms and one stepping up to 1 s back or forward`, () => {
        const random = new Random(seed ^ (kind.length * 7919));
        for (let trial = 0; trial < TRIALS; trial++) {
          const spec = specOf(kind, random);
          const nodes = skewedNodes(random, 50);
          const stepped = nodes[0]!;
          nodes[0] = { ...stepped, steps: [{ atMs: random.between(0, 20_000), byMs: random.between(-1000, 1000) }] };
          check(spec, nodes, random, `trial ${trial}`, seed);
        }
      });
    }
  });
}
