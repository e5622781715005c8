import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  fixedWindow,
  gcra,
  tokenBucket,
  type Algorithm,
  type PolicyStore,
  type Store,
} from '../src/index.js';
import { runs } from './support/sweep.js';

const isInvalidKey = (e: unknown): boolean => e instanceof FloodgateError && e.code === 'INVALID_KEY';

/** Values that are not keys: every one must be refused, by every method. */
const notKeys: readonly unknown[] = [
  undefined,
  null,
  '',
  0,
  42,
  NaN,
  true,
  {},
  [],
  Symbol('k'),
  ['a'],
  { toString: () => 'z' },
];

/** An asynchronous store that records every key it is handed: none of them may be invalid. */
function recordingStore(seen: unknown[]): Store {
  const inner = new MemoryStore();
  return {
    bind(algorithm: Algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      return {
        synchronous: false,
        consume: async (k, c, t) => (seen.push(k), table.consume(k, c, t)),
        peek: async (k, c, t) => (seen.push(k), table.peek(k, c, t)),
        refund: async (k, c, t) => (seen.push(k), table.refund(k, c, t)),
        reset: async (k) => (seen.push(k), table.reset(k)),
        reserve: async (k, c, t, w) => (seen.push(k), table.reserve!(k, c, t, w)),
      };
    },
  };
}

describe('keys are checked before anything else', () => {
  test('the sequence from the issue: consumeSync(undefined) after resetSync("z") no longer charges z', () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), clock });
    assert.equal(limiter.consumeSync('z').remaining, 9);
    limiter.resetSync('z');
    assert.equal(limiter.consumeSync('z').remaining, 9);
    for (let i = 0; i < 3; i++) assert.throws(() => limiter.consumeSync(undefined as never), isInvalidKey);
    assert.throws(() => limiter.peekSync(undefined as never), isInvalidKey);
    assert.equal(limiter.peekSync('z', { cost: 0 }).remaining, 9, 'z still has 9 left: nothing was charged to it');
  });

  test('a fresh limiter refuses undefined with INVALID_KEY, not a TypeError, and peekSync does not answer "allowed"', () => {
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    assert.throws(() => limiter.consumeSync(undefined as never), isInvalidKey);
    assert.throws(() => limiter.peekSync(undefined as never), isInvalidKey);
  });

  test('every sync method refuses every non-key; the error names the method', () => {
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    limiter.consumeSync('a');
    for (const bad of notKeys) {
      const k = bad as string;
      assert.throws(() => limiter.consumeSync(k), isInvalidKey, `consumeSync(${String(typeof bad)})`);
      assert.throws(() => limiter.peekSync(k), isInvalidKey);
      assert.throws(() => limiter.refundSync(k, 1), isInvalidKey);
      assert.throws(() => limiter.resetSync(k), isInvalidKey);
    }
    assert.throws(
      () => limiter.resetSync(''),
      (e) => isInvalidKey(e) && /Limiter\.resetSync/.test((e as Error).message),
    );
  });

  test('every promise method rejects (never throws) on every non-key, and the store never sees it', async () => {
    const seen: unknown[] = [];
    const limiter = new Limiter({
      policy: gcra({ rate: 1, periodMs: 1000, maxBurst: 1 }),
      clock: new ManualClock(0),
      store: recordingStore(seen),
    });
    for (const bad of notKeys) {
      const k = bad as string;
      const calls: Array<() => Promise<unknown>> = [
        () => limiter.consume(k),
        () => limiter.peek(k),
        () => limiter.refund(k, 1),
        () => limiter.reset(k),
        () => limiter.acquire(k),
        () => limiter.acquire(k, { maxWaitMs: 0 }),
      ];
      for (const call of calls) {
        let promise: Promise<unknown> | undefined;
        assert.doesNotThrow(() => (promise = call()));
        await assert.rejects(promise!, isInvalidKey);
      }
    }
    assert.deepEqual(seen, []);
  });

  test('the memory store itself refuses non-keys on every method, after a key was cached and after it was forgotten', () => {
    const table = new MemoryStore().bind(tokenBucket({ capacity: 3, refillPerSecond: 1 }));
    table.consume('z', 1, 0);
    for (const phase of ['cached', 'forgotten']) {
      for (const bad of notKeys) {
        const k = bad as string;
        assert.throws(() => table.consume(k, 1, 0), isInvalidKey, phase);
        assert.throws(() => table.peek(k, 1, 0), isInvalidKey, phase);
        assert.throws(() => table.refund(k, 1, 0), isInvalidKey, phase);
        assert.throws(() => table.reset(k), isInvalidKey, phase);
        assert.throws(() => table.reserve!(k, 1, 0, 0), isInvalidKey, phase);
      }
      table.reset('z');
    }
    assert.equal(table.size, 0, 'no invalid key was stored');
  });

  test("property: no sequence of calls with invalid keys changes any valid key's state", () => {
    type Op = { kind: 'consume' | 'peek' | 'refund' | 'reset'; key: unknown; cost: number; dtMs: number };
    const validKey = fc.constantFrom('a', 'b', 'z');
    const invalidKeyArb = fc.constantFrom(...notKeys);
    const opArb = (keyArb: fc.Arbitrary<unknown>): fc.Arbitrary<Op> =>
      fc.record({
        kind: fc.constantFrom('consume', 'peek', 'refund', 'reset'),
        key: keyArb,
        cost: fc.integer({ min: 0, max: 3 }),
        dtMs: fc.integer({ min: 0, max: 400 }),
      });
    const scriptArb = fc.array(fc.oneof(opArb(validKey), opArb(invalidKeyArb)), { maxLength: 40 });
    fc.assert(
      fc.property(scriptArb, (ops) => {
        // Two limiters run the same script; the second one never sees the invalid calls.
        const clocks = [new ManualClock(0), new ManualClock(0)];
        const limiters = clocks.map(
          (clock) => new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 2 }), clock }),
        );
        for (const op of ops) {
          const valid = typeof op.key === 'string' && op.key !== '';
          for (const [i, limiter] of limiters.entries()) {
            clocks[i]!.advance(op.dtMs);
            if (!valid && i === 1) continue;
            const run = (): unknown => {
              const k = op.key as string;
              if (op.kind === 'consume') return limiter.consumeSync(k, { cost: op.cost });
              if (op.kind === 'peek') return limiter.peekSync(k, { cost: op.cost });
              if (op.kind === 'refund') return limiter.refundSync(k, op.cost);
              return limiter.resetSync(k);
            };
            if (valid) run();
            else assert.throws(run, isInvalidKey);
          }
          for (const k of ['a', 'b', 'z']) assert.deepEqual(limiters[0]!.peekSync(k), limiters[1]!.peekSync(k));
        }
      }),
      { numRuns: runs(300) },
    );
  });
});
