import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decide,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../src/index.js';
import { OverflowSketch } from '../src/stores/overflow-sketch.js';
import { runs } from './support/sweep.js';

const policies: Record<string, () => Algorithm> = {
  'fixed window': () => fixedWindow({ limit: 5, windowMs: 1000 }),
  'token bucket': () => tokenBucket({ capacity: 5, refillPerSecond: 4 }),
  'leaky bucket': () => leakyBucket({ capacity: 3.5, leakPerSecond: 2 }),
  gcra: () => gcra({ rate: 4, periodMs: 1000, maxBurst: 4 }),
  'sliding window log': () => slidingWindowLog({ limit: 5, windowMs: 1000 }),
  'sliding window counter': () => slidingWindowCounter({ limit: 5, windowMs: 1000 }),
  'sliding window, sub-windows': () => slidingWindowCounter({ limit: 5, windowMs: 1000, subWindows: 4 }),
};
/** The policies whose sketch decides exactly as the policy for a key alone in its cells. */
const exactAlone = ['fixed window', 'token bucket', 'leaky bucket', 'gcra'];

const step = fc.record({
  key: fc.integer({ min: 0, max: 11 }),
  cost: fc.constantFrom(0, 1, 1, 1, 2, 0.5),
  advanceMs: fc.constantFrom(0, 0, 0, 1, 37, 250, 999, 1001),
});
/** Costs the policy accepts: the sliding log counts whole units only. */
const costFor = (policy: Algorithm, cost: number): number =>
  policy.name === 'sliding-window-log' ? Math.ceil(cost) : cost;

describe('overflow sketch: never admits a key beyond its limit', () => {
  for (const [name, make] of Object.entries(policies)) {
    it(`${name}: each key's admitted requests are all admitted by the exact policy (collisions forced)`, () => {
      fc.assert(
        fc.property(
          fc.array(step, { maxLength: 200 }),
          fc.integer({ min: 1, max: 4 }),
          fc.integer(),
          (steps, cellsPerRow, seed) => {
            const policy = make();
            const sketch = OverflowSketch.create(policy, { cellsPerRow, seed })!;
            const exact = new Map<number, Float64Array>();
            let nowMs = 1_700_000_000_000;
            for (const s of steps) {
              nowMs += s.advanceMs;
              const cost = costFor(policy, s.cost);
              if (!sketch.consume(`k${s.key}`, cost, nowMs).allowed) continue;
              // Replay the admitted request on the key's own exact state: it must fit there too.
              const { state, decision } = decide(policy, exact.get(s.key), nowMs, cost);
              assert.ok(decision.allowed, `key ${s.key} admitted by the sketch beyond the policy at ${nowMs}`);
              exact.set(s.key, state);
            }
          },
        ),
        { numRuns: runs(300) },
      );
    });
  }

  it('decides exactly as the policy for a key alone in its cells', () => {
    for (const name of exactAlone) {
      const policy = policies[name]!();
      const sketch = OverflowSketch.create(policy, { cellsPerRow: 1 << 16, seed: 7 })!;
      let state: Float64Array | undefined;
      let nowMs = 1_700_000_000_000;
      for (let i = 0; i < 60; i++) {
        nowMs += [0, 0, 10, 100, 700][i % 5]!;
        const fromSketch = sketch.consume('alone', 1, nowMs);
        const exact = decide(policy, state, nowMs, 1);
        assert.equal(fromSketch.allowed, exact.decision.allowed, `${policy.name} step ${i}`);
        assert.equal(fromSketch.remaining, exact.decision.remaining, `${policy.name} step ${i}`);
        if (exact.decision.allowed) state = exact.state;
      }
    }
  });

  it("holds a sliding window's key alone to at most its limit per two aligned windows, never more than the policy", () => {
    for (const name of ['sliding window log', 'sliding window counter', 'sliding window, sub-windows']) {
      const sketch = OverflowSketch.create(policies[name]!(), { cellsPerRow: 1 << 12, seed: 3 })!;
      const nowMs = 1_700_000_000_000; // a multiple of the window
      let admitted = 0;
      for (let t = 0; t < 2000; t += 50) if (sketch.consume('alone', 1, nowMs + t).allowed) admitted++;
      assert.equal(admitted, 5, name);
      assert.equal(
        sketch.consume('alone', 1, nowMs + 2000).allowed,
        true,
        `${name}: two windows on, the first window's count is gone`,
      );
    }
  });

  it('has no sketch for a policy of a kind it does not know', () => {
    const custom: Algorithm = { ...fixedWindow({ limit: 5, windowMs: 1000 }), kind: Symbol('custom') } as Algorithm;
    assert.equal(OverflowSketch.create(custom, { cellsPerRow: 8 }), undefined);
  });

  it('seeds a key moving into the exact table with what it spent here', () => {
    for (const make of Object.values(policies)) {
      const policy = make();
      const sketch = OverflowSketch.create(policy, { cellsPerRow: 1024, seed: 1 })!;
      const nowMs = 1_700_000_000_000;
      while (sketch.consume('k', 1, nowMs).allowed);
      const cells = new Float64Array(policy.width);
      policy.init(cells, 0, nowMs);
      sketch.seed('k', cells, 0, nowMs);
      assert.equal(policy.consume(cells, 0, nowMs, 1).allowed, false, policy.name);
      const fresh = new Float64Array(policy.width);
      policy.init(fresh, 0, nowMs);
      sketch.seed('other', fresh, 0, nowMs);
      assert.equal(policy.consume(fresh, 0, nowMs, 1).allowed, true, policy.name);
    }
  });
});

describe('overflow sketch: the newcomer bound', () => {
  /** Newcomers refused after `flood` keys of one unit each, in a sketch of `cellsPerRow` cells per row. */
  const wronglyRefused = (policy: Algorithm, flood: number, cellsPerRow: number): number => {
    const sketch = OverflowSketch.create(policy, { cellsPerRow, seed: 12345 })!;
    const nowMs = 1_700_000_000_000;
    for (let i = 0; i < flood; i++) sketch.consume(`minted:${i}`, 1, nowMs);
    let refused = 0;
    for (let i = 0; i < 2000; i++) if (!sketch.consume(`honest:${i}`, 1, nowMs).allowed) refused++;
    return refused / 2000;
  };

  it('at 10x cellsPerRow keys of one unit in flight, refuses at most 1% of honest newcomers (limit 33)', () => {
    for (const policy of [
      fixedWindow({ limit: 33, windowMs: 60_000 }),
      gcra({ rate: 1, periodMs: 1000, maxBurst: 32 }),
    ]) {
      assert.ok(wronglyRefused(policy, 20_000, 2000) <= 0.01, policy.name);
    }
  });

  it('says how much memory it takes: 4 rows of 8-byte cells, two sets for the sliding windows', () => {
    assert.equal(OverflowSketch.create(fixedWindow({ limit: 1, windowMs: 1 }), { cellsPerRow: 1000 })!.bytes, 32_000);
    assert.equal(
      OverflowSketch.create(slidingWindowLog({ limit: 1, windowMs: 1 }), { cellsPerRow: 1000 })!.bytes,
      64_000,
    );
  });
});

describe('overflow sketch: bookings (reserve) for the buckets and GCRA', () => {
  const booking = fc.record({
    key: fc.integer({ min: 0, max: 7 }),
    cost: fc.constantFrom(1, 1, 2, 0.5),
    advanceMs: fc.constantFrom(0, 0, 3, 100, 700),
    maxWaitMs: fc.constantFrom(0, 50, 500, 5000),
  });
  for (const name of ['token bucket', 'leaky bucket', 'gcra']) {
    it(`${name}: every booked request proceeds when the exact policy admits it (collisions forced)`, () => {
      fc.assert(
        fc.property(fc.array(booking, { maxLength: 120 }), fc.integer({ min: 1, max: 3 }), (steps, cellsPerRow) => {
          const policy = policies[name]!();
          const sketch = OverflowSketch.create(policy, { cellsPerRow, seed: 5 })!;
          const proceeds = new Map<number, { atMs: number; cost: number }[]>();
          let nowMs = 1_700_000_000_000;
          for (const s of steps) {
            nowMs += s.advanceMs;
            const waitMs = sketch.reserve(`k${s.key}`, s.cost, nowMs, s.maxWaitMs);
            assert.ok(waitMs <= s.maxWaitMs);
            if (waitMs >= 0)
              proceeds.set(s.key, [...(proceeds.get(s.key) ?? []), { atMs: nowMs + waitMs, cost: s.cost }]);
          }
          for (const [key, list] of proceeds) {
            let state: Float64Array | undefined;
            for (const p of [...list].sort((a, b) => a.atMs - b.atMs)) {
              const { state: next, decision } = decide(policy, state, p.atMs, p.cost);
              assert.ok(decision.allowed, `k${key} proceeds at ${p.atMs} beyond the policy`);
              state = next;
            }
          }
        }),
        { numRuns: runs(300) },
      );
    });
  }

  it('books nothing for the window policies', () => {
    assert.equal(
      OverflowSketch.create(fixedWindow({ limit: 5, windowMs: 1000 }), { cellsPerRow: 8 })!.reserve('k', 1, 0, 1000),
      -1,
    );
  });
});
