import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  tokenBucket,
  type Algorithm,
  type PolicyStore,
  type Store,
} from '../src/index.js';
import type { Decision } from '../src/core/decision.js';

/** An asynchronous store, as Redis will be: answers through promises only. */
function asyncStore(inner: Store): Store {
  return {
    bind(algorithm: Algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      return {
        synchronous: false,
        consume: async (k, c, t) => table.consume(k, c, t),
        peek: async (k, c, t) => table.peek(k, c, t),
        refund: async (k, c, t) => table.refund(k, c, t),
        reset: async (k) => table.reset(k),
      };
    },
  };
}

describe('Limiter', () => {
  test('the sync and promise forms make the same decisions on the clock it is given', async () => {
    const clock = new ManualClock(1_000);
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }), clock });
    assert.equal(limiter.consumeSync('a').remaining, 1);
    assert.equal((await limiter.consume('a')).remaining, 0);
    const refused: Decision = limiter.consumeSync('a');
    assert.deepEqual(refused, {
      allowed: false,
      limit: 2,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 2000,
      reason: 'limit',
    });
    assert.equal((await limiter.peek('a')).allowed, false);
    clock.advance(500);
    assert.equal(limiter.peekSync('a', { cost: 0.5 }).allowed, true, 'half a token has come back');
    await limiter.refund('a', 1);
    assert.equal(limiter.consumeSync('a').allowed, true);
    limiter.resetSync('a');
    assert.equal(limiter.peekSync('a').remaining, 1);
    limiter.refundSync('a', 1);
    await limiter.reset('a');
  });

  test('works through an asynchronous store, and its ...Sync methods say why they cannot', async () => {
    const clock = new ManualClock(0);
    const { MemoryStore } = await import('../src/index.js');
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
      clock,
      store: asyncStore(new MemoryStore()),
    });
    assert.equal((await limiter.consume('k')).allowed, true);
    assert.equal((await limiter.consume('k')).allowed, false);
    assert.throws(
      () => limiter.consumeSync('k'),
      (e) => e instanceof FloodgateError && e.code === 'STORE_NOT_SYNC',
    );
  });

  test('bad input rejects the promise with a typed error instead of throwing', async () => {
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }) });
    await assert.rejects(
      limiter.consume('k', { cost: 3 }),
      (e) => e instanceof FloodgateError && e.code === 'COST_EXCEEDS_LIMIT',
    );
    await assert.rejects(
      limiter.consume('k', { cost: -1 }),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_COST',
    );
    await assert.rejects(
      limiter.peek('k', { cost: Number.NaN }),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_COST',
    );
    assert.throws(
      () => limiter.consumeSync('k', { cost: Infinity }),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_COST',
    );
    assert.throws(
      () => new Limiter({} as never),
      (e) => e instanceof FloodgateError && e.option === 'Limiter.policy',
    );
    assert.throws(
      () => new Limiter(undefined as never),
      (e) => e instanceof FloodgateError && e.option === 'Limiter',
    );
  });
});

describe('Limiter and stores that own their clock', () => {
  /** A store that records the nowMs each consume and peek is given, answering from a memory table. */
  function recording(ownsClock: boolean): { store: Store; seen: number[] } {
    const seen: number[] = [];
    const store: Store = {
      bind(algorithm: Algorithm): PolicyStore {
        const table = asyncStore(new MemoryStore()).bind(algorithm);
        return {
          ...table,
          ownsClock,
          consume: (k, c, t) => (seen.push(t), table.consume(k, c, Number.isNaN(t) ? 0 : t)),
          peek: (k, c, t) => (seen.push(t), table.peek(k, c, Number.isNaN(t) ? 0 : t)),
        };
      },
    };
    return { store, seen };
  }

  test('on the system clock, consume and peek read no clock for such a store: nowMs is NaN', async () => {
    const { store, seen } = recording(true);
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }), store });
    await limiter.consume('k');
    await limiter.peek('k');
    assert.equal(seen.length, 2);
    assert.ok(seen.every(Number.isNaN));
  });

  test('with a clock of its own, or a store that does not own its clock, the Limiter passes its time', async () => {
    const clock = new ManualClock(1234);
    const owned = recording(true);
    await new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }), store: owned.store, clock }).consume(
      'k',
    );
    assert.deepEqual(owned.seen, [1234]);
    const plain = recording(false);
    const before = Date.now();
    await new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 1 }), store: plain.store }).consume('k');
    assert.ok(plain.seen[0]! >= before && plain.seen[0]! <= Date.now());
  });
});
