import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  consumeAllSync,
  decide,
  fixedWindow,
  FloodgateError,
  gcra,
  leakyBucket,
  Limiter,
  ManualClock,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../src/index.js';
import { runs } from './support/sweep.js';

describe('MemoryStore overflow tier: open to newcomers under an identity flood', () => {
  it('decides new keys past maxKeys by the sketch: the throttled key stays throttled, newcomers pass', () => {
    const maxKeys = 1000;
    const table = new MemoryStore({ maxKeys }).bind(tokenBucket({ capacity: 10, refillPerSecond: 0.01 }));
    for (let i = 0; i < 10; i++) assert.equal(table.consume('victim', 1, 0).allowed, true);
    assert.equal(table.consume('victim', 1, 0).reason, 'limit');
    for (let i = 0; i < 10 * maxKeys; i++) table.consume(`minted:${i}`, 1, 10);
    assert.ok(table.size <= maxKeys);
    let refused = 0;
    for (let i = 0; i < 1000; i++) {
      const d = table.consume(`honest:${i}`, 1, 20);
      if (!d.allowed) refused++;
      else assert.equal(d.reason, 'ok');
    }
    assert.ok(refused <= 10, `at most 1% of honest newcomers refused, got ${refused}`);
    assert.equal(table.consume('victim', 1, 20).allowed, false, 'the throttled key is never evicted');
    // A minted key that spends beyond its limit through the sketch is refused there too.
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (table.consume('minted:7', 1, 30).allowed) admitted++;
    assert.ok(admitted <= 9, `minted:7 admitted ${admitted} more after its first unit`);
  });

  it('keeps what a key spent in the sketch when it moves into the exact table', () => {
    const table = new MemoryStore({ maxKeys: 1 }).bind(gcra({ rate: 1, periodMs: 1000, maxBurst: 2 }));
    assert.equal(table.consume('a', 1, 0).allowed, true); // rests at 1000
    for (let i = 0; i < 3; i++) assert.equal(table.consume('x', 1, 500).allowed, true); // by the sketch
    assert.equal(table.consume('x', 1, 500).allowed, false);
    assert.equal(table.peek('x', 1, 600).allowed, false, 'peek reads the sketch');
    // At 1000 'a' is at rest and makes room: 'x' enters the exact table with its spending.
    assert.equal(table.consume('x', 1, 1000).allowed, false);
    assert.equal(table.size, 1);
    assert.equal(table.consume('x', 1, 1500).allowed, true, "and recovers at the policy's rate");
  });

  const policies: Record<string, () => Algorithm> = {
    'fixed window': () => fixedWindow({ limit: 3, windowMs: 1000 }),
    'token bucket': () => tokenBucket({ capacity: 3, refillPerSecond: 2 }),
    'leaky bucket': () => leakyBucket({ capacity: 2, leakPerSecond: 3 }),
    gcra: () => gcra({ rate: 2, periodMs: 1000, maxBurst: 2 }),
    'sliding window log': () => slidingWindowLog({ limit: 3, windowMs: 1000 }),
    'sliding window counter': () => slidingWindowCounter({ limit: 3, windowMs: 1000 }),
    'sliding window, sub-windows': () => slidingWindowCounter({ limit: 3, windowMs: 1000, subWindows: 5 }),
  };
  const step = fc.record({
    key: fc.integer({ min: 0, max: 9 }),
    cost: fc.constantFrom(1, 1, 2, 0.5),
    advanceMs: fc.constantFrom(0, 0, 5, 120, 400, 1000),
  });
  for (const [name, make] of Object.entries(policies)) {
    it(`${name}: through the exact table, the sketch and back, no key is ever admitted beyond its limit`, () => {
      fc.assert(
        fc.property(fc.array(step, { maxLength: 150 }), fc.integer({ min: 1, max: 4 }), (steps, maxKeys) => {
          const policy = make();
          const table = new MemoryStore({ maxKeys }).bind(policy);
          const exact = new Map<number, Float64Array>();
          let nowMs = 1_000_000;
          for (const s of steps) {
            nowMs += s.advanceMs;
            const cost = policy.name === 'sliding-window-log' ? Math.ceil(s.cost) : s.cost;
            if (!table.consume(`k${s.key}`, cost, nowMs).allowed) continue;
            const { state, decision } = decide(policy, exact.get(s.key), nowMs, cost);
            assert.ok(decision.allowed, `k${s.key} admitted beyond the policy at ${nowMs}`);
            exact.set(s.key, state);
          }
          assert.ok(table.size <= maxKeys);
        }),
        { numRuns: runs(300) },
      );
    });
  }

  it('refuses new keys as store-full with overflow: false, and a bad overflow option with a typed error', () => {
    const table = new MemoryStore({ maxKeys: 1, overflow: false }).bind(gcra({ rate: 1, periodMs: 1000, maxBurst: 2 }));
    table.consume('a', 1, 0);
    assert.equal(table.consume('b', 1, 0).reason, 'store-full');
    assert.throws(
      () => new MemoryStore({ overflow: 'yes' as unknown as boolean }),
      (err: unknown) => err instanceof FloodgateError && err.option === 'MemoryStore.overflow',
    );
  });
});

describe('MemoryStore overflow tier: bookings', () => {
  it('books a key the full table cannot hold in the sketch, so acquire-style waits still work', () => {
    const table = new MemoryStore({ maxKeys: 1 }).bind(gcra({ rate: 1, periodMs: 1000, maxBurst: 1 }));
    table.consume('a', 1, 0);
    assert.equal(table.reserve!('x', 1, 0, 0), 0);
    assert.equal(table.reserve!('x', 1, 0, 0), 0);
    assert.equal(table.reserve!('x', 1, 0, 500), -1, 'the next slot is 1000 ms away');
    assert.equal(table.reserve!('x', 1, 0, 5000), 1000);
    assert.equal(table.consume('x', 1, 1000).allowed, false, 'the booked slot is taken');
  });
});

describe('MemoryStore overflow tier: several limits at once', () => {
  it('consumeAllSync admits newcomers past a full table instead of refusing them as store-full', () => {
    const store = new MemoryStore({ maxKeys: 100 });
    const clock = new ManualClock(0);
    const perIp = new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), store, clock });
    const perUser = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 1e-6 }), store, clock });
    for (let i = 0; i < 1000; i++)
      consumeAllSync([
        { limiter: perIp, key: `ip:${i}` },
        { limiter: perUser, key: `user:${i}` },
      ]);
    let admitted = 0;
    for (let i = 0; i < 100; i++)
      if (
        consumeAllSync([
          { limiter: perIp, key: `ip:new${i}` },
          { limiter: perUser, key: `user:new${i}` },
        ]).allowed
      )
        admitted++;
    assert.ok(admitted >= 99, `admitted ${admitted} of 100`);
    // And a key spent through the sketch is refused there.
    for (let i = 0; i < 10; i++)
      consumeAllSync([
        { limiter: perIp, key: 'ip:x' },
        { limiter: perUser, key: 'user:x' },
      ]);
    const over = consumeAllSync([
      { limiter: perIp, key: 'ip:x' },
      { limiter: perUser, key: 'user:x' },
    ]);
    assert.equal(over.allowed, false);
    assert.equal(over.decisions[0]!.reason, 'limit');
  });
});

describe('MemoryStore.overflowCounts', () => {
  it('counts the requests of new keys a full table could not hold, and those refused', () => {
    const store = new MemoryStore({ maxKeys: 2 });
    const table = store.bind(fixedWindow({ limit: 1, windowMs: 60_000 }));
    assert.deepEqual(store.overflowCounts(), { decided: 0, refused: 0 });
    const allowed = ['a', 'b', 'c', 'd', 'c'].map((key) => table.consume(key, 1, 0).allowed);
    const counts = store.overflowCounts();
    assert.equal(counts.decided, 3, 'c, d and c again: past the two keys held');
    assert.equal(counts.refused, allowed.slice(2).filter((a) => !a).length);
    assert.ok(counts.refused >= 1, 'c twice in one window: refused at least once');
  });
});
