import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryStore } from '../src/index.js';
import { build, costArb, policyArb, policyKinds } from './support/policies.js';
import { PureStore } from './support/pure-store.js';
import { runs } from './support/sweep.js';

/**
 * The memory store answers a repeated refusal at the same instant from its last refusal. These
 * runs make floods at one instant common (most steps do not move the clock) and mix in every
 * other call that changes a key, and compare every answer with the pure core's.
 */
describe('repeated refusals at one instant answer exactly as the pure core', () => {
  for (const kind of policyKinds) {
    test(kind, () => {
      const opArb = fc.record({
        op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'refund', 'reset'),
        key: fc.constantFrom('a', 'b'),
        dtMs: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 500 })),
      });
      fc.assert(
        fc.property(
          policyArb(kind).chain((spec) =>
            fc.tuple(fc.constant(spec), fc.array(fc.tuple(opArb, costArb(spec, true)), { maxLength: 80 })),
          ),
          ([spec, steps]) => {
            const policy = build(spec);
            const memory = new MemoryStore().bind(policy);
            const pure = new PureStore(policy);
            let nowMs = 1_000_000;
            for (const [{ op, key, dtMs }, cost] of steps) {
              nowMs += dtMs;
              if (op === 'consume') assert.deepEqual(memory.consume(key, cost, nowMs), pure.consume(key, cost, nowMs));
              else if (op === 'peek') assert.deepEqual(memory.peek(key, cost, nowMs), pure.peek(key, cost, nowMs));
              else if (op === 'refund') {
                memory.refund(key, cost, nowMs);
                pure.refund(key, cost, nowMs);
              } else {
                memory.reset(key);
                pure.reset(key);
              }
            }
          },
        ),
        { numRuns: runs(150) },
      );
    });
  }

  test('the same refusal object is handed back within one instant, a new one after any change', () => {
    const table = new MemoryStore().bind(build({ kind: 'tokenBucket', capacity: 1, perSecond: 1 }));
    table.consume('k', 1, 0);
    const first = table.consume('k', 1, 0);
    assert.equal(first.allowed, false);
    assert.equal(table.consume('k', 1, 0), first);
    table.refund('k', 0.5, 0);
    const after = table.consume('k', 1, 0);
    assert.notEqual(after, first);
    assert.ok(after.retryAfterMs < first.retryAfterMs, 'the refund is seen');
    assert.notEqual(table.consume('k', 1, 1), after, 'another instant decides again');
  });
});
