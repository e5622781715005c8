import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FloodgateError, MemoryStore, fixedWindow, gcra, slidingWindowLog, tokenBucket } from '../src/index.js';

describe('MemoryStore at its maxKeys bound', () => {
  // Without the overflow tier (see overflow-memory-store.test.ts for the store with it).
  test('a flood of fresh keys cannot evict, and so reset, a throttled key', () => {
    const table = new MemoryStore({ maxKeys: 100, overflow: false }).bind(
      tokenBucket({ capacity: 5, refillPerSecond: 1 }),
    );
    for (let i = 0; i < 5; i++) assert.equal(table.consume('victim', 1, 0).allowed, true);
    assert.equal(table.consume('victim', 1, 0).allowed, false);
    let refused = 0;
    for (let i = 0; i < 10_000; i++) {
      const d = table.consume(`attacker:${i}`, 1, 10);
      if (!d.allowed) {
        assert.equal(d.reason, 'store-full');
        refused++;
      }
    }
    assert.ok(refused >= 9_900, `the flood beyond the bound is refused (${refused})`);
    assert.ok(table.size <= 100);
    const victim = table.consume('victim', 1, 10);
    assert.equal(victim.allowed, false, 'the throttled key is still throttled');
    assert.equal(victim.reason, 'limit');
  });

  test('a store-full refusal says when the soonest examined key comes to rest', () => {
    const table = new MemoryStore({ maxKeys: 2, overflow: false }).bind(
      tokenBucket({ capacity: 2, refillPerSecond: 1 }),
    );
    table.consume('a', 1, 0); // rests at 1000
    table.consume('b', 2, 0); // rests at 2000
    const d = table.consume('c', 1, 400);
    assert.equal(d.allowed, false);
    assert.equal(d.reason, 'store-full');
    assert.equal(d.retryAfterMs, 600);
    assert.equal(table.consume('c', 1, 1000).allowed, true, "'a' is at rest at 1000 and makes room");
    assert.equal(table.size, 2);
    assert.equal(table.peek('b', 2, 1000).allowed, false, "'b' is kept: it has not come back to full");
  });

  test('keys at rest are forgotten by the sweep, which changes no decision', () => {
    const table = new MemoryStore().bind(fixedWindow({ limit: 3, windowMs: 1000 }));
    for (let i = 0; i < 1000; i++) table.consume(`old:${i}`, 1, 0);
    assert.equal(table.size, 1000);
    // After the window ends every old key is at rest; new keys sweep them away as they arrive.
    for (let i = 0; i < 1000; i++) table.consume(`new:${i}`, 1, 5000);
    assert.ok(table.size < 1500, `size ${table.size}`);
    assert.equal(table.consume('old:1', 3, 5000).remaining, 0, 'a forgotten key reads as fresh, as it would have');
  });

  test('peek and refund of an unknown key store nothing', () => {
    const table = new MemoryStore().bind(gcra({ rate: 1, periodMs: 1000, maxBurst: 2 }));
    assert.equal(table.peek('ghost', 1, 0).remaining, 2);
    table.refund('ghost', 1, 0);
    assert.equal(table.size, 0);
  });

  test('policies bound to one store keep separate state', () => {
    const store = new MemoryStore();
    const a = store.bind(tokenBucket({ capacity: 1, refillPerSecond: 1 }));
    const b = store.bind(slidingWindowLog({ limit: 1, windowMs: 1000 }));
    assert.equal(a.consume('k', 1, 0).allowed, true);
    assert.equal(b.consume('k', 1, 0).allowed, true);
    assert.equal(store.size, 2);
    const policy = tokenBucket({ capacity: 1, refillPerSecond: 1 });
    assert.equal(store.bind(policy), store.bind(policy), 'binding the same policy twice gives the same table');
    assert.equal(store.bind(policy), a, 'an equal policy (same name and parameters) gets the same table');
    assert.notEqual(store.bind(tokenBucket({ capacity: 2, refillPerSecond: 1 })), a, 'a different one gets its own');
  });

  test('refuses bad keys and options with typed errors', () => {
    const table = new MemoryStore({ maxKeyLength: 8 }).bind(tokenBucket({ capacity: 1, refillPerSecond: 1 }));
    assert.throws(
      () => table.consume('x'.repeat(9), 1, 0),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_KEY',
    );
    assert.throws(
      () => table.consume(42 as unknown as string, 1, 0),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_KEY',
    );
    assert.throws(
      () => new MemoryStore({ maxKeys: 0 }),
      (e) => e instanceof FloodgateError && e.option === 'MemoryStore.maxKeys',
    );
    assert.throws(
      () => new MemoryStore({ maxKeyLength: 1e6 }),
      (e) => e instanceof FloodgateError && e.option === 'MemoryStore.maxKeyLength',
    );
  });
});

describe('a key forgotten at rest, then a clock that stepped back', () => {
  test('it is decided no earlier than its rest time: the window it spent is not handed out again', () => {
    const table = new MemoryStore().bind(fixedWindow({ limit: 5, windowMs: 1000 }));
    let admitted = 0;
    for (let i = 0; i < 5; i++) if (table.consume('a', 1, 500).allowed) admitted++;
    assert.equal(admitted, 5);
    // At 2500 other keys come and go: the sweeps forget 'a', at rest since its window ended at 1000.
    for (let i = 0; i < 20; i++) table.consume(`other${i}`, 1, 2500);
    assert.equal(table.stateOf('a'), undefined, 'forgotten');
    assert.ok(table.restFloorMs >= 1000);
    // The clock steps back to 600, inside the window 'a' spent: it is decided as of 1000 at the
    // earliest, a new window, and the clock's return to 1000-1999 finds that same window.
    let again = 0;
    for (const atMs of [600, 700, 900, 1000, 1500, 1999])
      for (let i = 0; i < 5; i++) if (table.consume('a', 1, atMs).allowed) again++;
    assert.equal(again, 5, "one window's limit between 600 and 1999, not two");
  });
});
