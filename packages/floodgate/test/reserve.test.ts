import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore, fixedWindow, gcra, tokenBucket } from '../src/index.js';

describe('reserve books the future on token bucket and GCRA', () => {
  test('x/time/rate reservations on NewLimiter(10, 2): t0 -> t0, t0 -> t2, t3 -> t4', () => {
    const table = new MemoryStore().bind(tokenBucket({ capacity: 2, refillPerSecond: 10 }));
    assert.equal(table.reserve!('k', 2, 0, Infinity), 0);
    assert.equal(table.reserve!('k', 2, 0, Infinity), 200);
    assert.equal(table.reserve!('k', 2, 300, Infinity), 100);
  });

  test('a reservation beyond maxWaitMs charges nothing', () => {
    const table = new MemoryStore().bind(tokenBucket({ capacity: 2, refillPerSecond: 1 }));
    assert.equal(table.reserve!('k', 2, 0, 0), 0);
    assert.equal(table.reserve!('k', 1, 0, 999), -1);
    assert.equal(table.reserve!('k', 1, 0, 1000), 1000);
    assert.equal(table.peek('k', 1, 0).retryAfterMs, 2000, 'the debt of the booked request delays the next');
    table.refund('k', 1, 0); // the waiter gave up: its token comes back
    assert.equal(table.peek('k', 1, 0).retryAfterMs, 1000);
  });

  test('GCRA books the theoretical arrival time; consume sees the booking', () => {
    const table = new MemoryStore().bind(gcra({ rate: 1, periodMs: 1000, maxBurst: 1 }));
    assert.equal(table.reserve!('k', 2, 0, Infinity), 0);
    assert.equal(table.reserve!('k', 1, 0, Infinity), 1000);
    assert.equal(table.reserve!('k', 1, 0, 1999), -1);
    assert.equal(table.consume('k', 1, 1500).allowed, false);
    assert.equal(table.consume('k', 1, 2000).allowed, true);
  });

  // A booking must be what consuming at its (whole-ms) due time would be: the bucket cannot fill
  // past capacity while the wait is rounded up, nor GCRA's TAT start before the due time.
  // Capacity 3 at 7/s: a full refill takes 428.57 ms, so consuming 3 at a time is admitted at
  // 0, 429 (428.57 rounded up), 858 (429 + 428.57) and 1287 ms.
  for (const [name, policy] of [
    ['token bucket', tokenBucket({ capacity: 3, refillPerSecond: 7 })],
    ['GCRA', gcra({ rate: 7, periodMs: 1000, maxBurst: 2 })],
  ] as const) {
    test(`${name}: bookings rounded to whole ms never drift ahead of consume at the due time`, () => {
      const table = new MemoryStore().bind(policy);
      const waits = [0, 0, 0, 0].map(() => table.reserve!('k', 3, 0, Infinity));
      assert.deepEqual(waits, [0, 429, 858, 1287]);
    });
  }

  test('window policies cannot book the future', () => {
    assert.equal(new MemoryStore().bind(fixedWindow({ limit: 1, windowMs: 1000 })).reserve, undefined);
  });
});
