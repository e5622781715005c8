import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryStore, decide } from '../src/index.js';
import { assertWithinBound, type Admission } from './support/bounds.js';
import { assertWellFormed } from './support/decisions.js';
import {
  build,
  costArb,
  limitOf,
  policyArb,
  policyKinds,
  startArb,
  stepArb,
  type PolicyKind,
  type PolicySpec,
} from './support/policies.js';
import { PureStore } from './support/pure-store.js';
import { runs } from './support/sweep.js';

const numRuns = runs(200);

interface Scenario {
  readonly spec: PolicySpec;
  readonly startMs: number;
  readonly steps: ReadonlyArray<{ readonly dtMs: number; readonly cost: number }>;
}

/** scenarioArb returns a policy of `kind` with random traffic on one key; `positive` leaves out cost 0. */
function scenarioArb(kind: PolicyKind, positive = false): fc.Arbitrary<Scenario> {
  return policyArb(kind).chain((spec) =>
    fc.record({
      spec: fc.constant(spec),
      startMs: startArb,
      steps: fc.array(fc.record({ dtMs: stepArb(spec), cost: costArb(spec, positive) }), {
        minLength: 1,
        maxLength: 60,
      }),
    }),
  );
}

/** timesOf returns the time of each step; the clock may go back, but not below 0. */
function timesOf(s: Scenario): number[] {
  let t = s.startMs;
  return s.steps.map(({ dtMs }) => (t = Math.max(0, t + dtMs)));
}

function sameCells(a: Float64Array, b: Float64Array | undefined): boolean {
  return (
    b !== undefined && a.length === b.length && a.every((x, i) => x === b[i] || (Number.isNaN(x) && Number.isNaN(b[i])))
  );
}

function forEachKind(name: string, check: (kind: PolicyKind) => void): void {
  describe(name, () => {
    for (const kind of policyKinds) test(kind, () => check(kind));
  });
}

forEachKind('(a) admitted cost never exceeds what the policy allows', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind, true), (s) => {
      const store = new PureStore(build(s.spec));
      const times = timesOf(s);
      const run: Admission[] = s.steps.map(({ cost }, i) => {
        const atMs = times[i]!;
        return { atMs, cost, allowed: store.consume('k', cost, atMs).allowed };
      });
      assertWithinBound(s.spec, run);
    }),
    { numRuns },
  );
});

forEachKind('(b) every decision is well formed: remaining never negative', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind), (s) => {
      const algorithm = build(s.spec);
      const store = new PureStore(algorithm);
      for (const [i, atMs] of timesOf(s).entries()) {
        const cost = s.steps[i]!.cost;
        assertWellFormed(store.peek('k', cost, atMs), algorithm.limit, `peek ${i + 1}`);
        assertWellFormed(store.peek('k', 0, atMs), algorithm.limit, `peek 0, ${i + 1}`);
        assertWellFormed(store.consume('k', cost, atMs), algorithm.limit, `consume ${i + 1}`);
      }
    }),
    { numRuns },
  );
});

forEachKind('(c) decide never mutates its input, and a rejected request changes no state', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind), (s) => {
      const algorithm = build(s.spec);
      let state: Float64Array | undefined;
      for (const [i, atMs] of timesOf(s).entries()) {
        const before = state?.slice();
        const { state: next, decision } = decide(algorithm, state, atMs, s.steps[i]!.cost);
        if (state !== undefined) assert.ok(sameCells(state, before), `step ${i + 1}: decide mutated its input`);
        if (!decision.allowed) {
          assert.ok(sameCells(next, before), `step ${i + 1}: refused, yet [${before?.join()}] became [${next.join()}]`);
        }
        state = next;
      }
    }),
    { numRuns },
  );
});

forEachKind('(d) a clock going backwards never creates capacity', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind), (s) => {
      const store = new PureStore(build(s.spec));
      let previous: number | undefined;
      for (const [i, atMs] of timesOf(s).entries()) {
        const cost = s.steps[i]!.cost;
        if (previous !== undefined && atMs < previous) {
          const where = `step ${i + 1}: from ${previous} back to ${atMs}`;
          const remainingBefore = store.peek('k', 0, previous).remaining;
          const remainingAfter = store.peek('k', 0, atMs).remaining;
          assert.ok(remainingAfter <= remainingBefore, `${where}: remaining ${remainingBefore} -> ${remainingAfter}`);
          if (store.peek('k', cost, atMs).allowed) {
            assert.ok(store.peek('k', cost, previous).allowed, `${where}: cost ${cost} admitted only after going back`);
          }
        }
        store.consume('k', cost, atMs);
        previous = atMs;
      }
    }),
    { numRuns },
  );
});

type Op = 'consume' | 'peek' | 'refund' | 'reset';

/**
 * sameAsPure feeds the pure core and the memory store the same random operations on two keys and
 * checks every decision, and after every step a peek of both keys.
 *
 * The memory store forgets a key once its state is at rest (back to a fresh key's). While the
 * clock only moves forward that changes no decision. When the clock goes back past a key's rest
 * time, the pure core still holds the old state and the memory store answers as for a fresh key:
 * exactly what the key had at the latest time seen, never more. So with backward steps, and only
 * then, a difference is allowed for a key whose pure state is at rest as of the latest time seen,
 * and the memory store's answer must then be a fresh key's; the pure side then forgets the key too.
 */
function sameAsPure(kind: PolicyKind, backwards: boolean): void {
  const opArb = fc.oneof(
    { weight: 6, arbitrary: fc.constant<Op>('consume') },
    { weight: 2, arbitrary: fc.constant<Op>('peek') },
    { weight: 1, arbitrary: fc.constant<Op>('refund') },
    { weight: 1, arbitrary: fc.constant<Op>('reset') },
  );
  const arb = policyArb(kind).chain((spec) =>
    fc.record({
      spec: fc.constant(spec),
      startMs: startArb,
      steps: fc.array(
        fc.record({ dtMs: stepArb(spec, backwards), cost: costArb(spec), op: opArb, key: fc.constantFrom('a', 'b') }),
        { minLength: 1, maxLength: 80 },
      ),
    }),
  );
  fc.assert(
    fc.property(arb, (s) => {
      const algorithm = build(s.spec);
      const pure = new PureStore(algorithm);
      const memory = new MemoryStore().bind(algorithm);
      let latestMs = -Infinity;
      /**
       * The time the pure side decides `key` at, as the memory store does: a key the memory store
       * does not hold is decided no earlier than the latest rest time of the keys it forgot. When it
       * forgot `key` itself (the pure side still holds it), that state was at rest: the pure side
       * forgets it too.
       */
      const timeFor = (key: string, atMs: number, where: string): number => {
        if (memory.stateOf(key) !== undefined) return atMs;
        const state = pure.stateOf(key);
        if (state !== undefined) {
          assert.ok(
            backwards || algorithm.restAtMs(state, 0) <= atMs,
            `${where}: forgotten, yet not at rest on a clock that never went back`,
          );
          assert.ok(algorithm.restAtMs(state, 0) <= latestMs, `${where}: the memory store forgot a key not at rest`);
          pure.reset(key);
        }
        return Math.max(atMs, memory.restFloorMs);
      };
      for (const [i, atMs] of timesOf(s).entries()) {
        const { op, key, cost } = s.steps[i]!;
        const where = `step ${i + 1}: ${op} ${key} cost ${cost} at ${atMs}`;
        if (op === 'reset') [pure, memory].forEach((store) => store.reset(key));
        else if (op === 'refund') {
          const pureMs = timeFor(key, atMs, where);
          memory.refund(key, cost, atMs);
          pure.refund(key, cost, pureMs);
        } else {
          const pureMs = timeFor(key, atMs, where);
          const fromMemory = memory[op](key, cost, atMs);
          assert.deepEqual(fromMemory, pure[op](key, cost, pureMs), where);
        }
        latestMs = Math.max(latestMs, atMs);
        for (const k of ['a', 'b']) {
          const then = `${where}, then peek ${k}`;
          const pureMs = timeFor(k, atMs, then);
          assert.deepEqual(memory.peek(k, 0, atMs), pure.peek(k, 0, pureMs), then);
        }
      }
    }),
    { numRuns },
  );
}

forEachKind(
  '(e) the pure core and the memory store agree; a key the memory store forgot at rest is decided no earlier than its rest time',
  (kind) => sameAsPure(kind, true),
);
forEachKind('(e) ... and so on a clock that never goes back', (kind) => sameAsPure(kind, false));

forEachKind('(f) retryAfterMs is exact: admitted then, refused 1 ms before', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind, true), (s) => {
      const store = new PureStore(build(s.spec));
      let newest = -Infinity;
      for (const [i, atMs] of timesOf(s).entries()) {
        const cost = s.steps[i]!.cost;
        const d = store.consume('k', cost, atMs);
        // Only with the clock at or past every earlier time: behind, the wait is not defined by the spec.
        if (!d.allowed && atMs >= newest) {
          const where = `step ${i + 1}: cost ${cost} at ${atMs} refused with retryAfterMs ${d.retryAfterMs}`;
          assert.ok(store.peek('k', cost, atMs + d.retryAfterMs).allowed, `${where}, but not admitted then`);
          assert.ok(!store.peek('k', cost, atMs + d.retryAfterMs - 1).allowed, `${where}, yet admitted 1 ms before`);
        }
        newest = Math.max(newest, atMs);
      }
    }),
    { numRuns },
  );
});

forEachKind('(g) resetMs is exact: full then, not 1 ms before', (kind) => {
  fc.assert(
    fc.property(scenarioArb(kind), (s) => {
      const store = new PureStore(build(s.spec));
      const limit = limitOf(s.spec);
      let newest = -Infinity;
      for (const [i, atMs] of timesOf(s).entries()) {
        const d = store.consume('k', s.steps[i]!.cost, atMs);
        if (atMs >= newest) {
          const where = `step ${i + 1} at ${atMs}: resetMs ${d.resetMs}`;
          const then = store.peek('k', 0, atMs + d.resetMs);
          assert.ok(then.remaining === limit && then.resetMs === 0, `${where}, but then ${JSON.stringify(then)}`);
          if (d.resetMs >= 1)
            assert.ok(store.peek('k', 0, atMs + d.resetMs - 1).resetMs >= 1, `${where}, yet full 1 ms before`);
        }
        newest = Math.max(newest, atMs);
      }
    }),
    { numRuns },
  );
});
