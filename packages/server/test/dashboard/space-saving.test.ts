import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SpaceSaving, tieRank } from '../../src/dashboard/space-saving.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

/** A tolerance for float sums of decayed weights. */
function close(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

const event = fc.record({
  key: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 40 })),
  weight: fc.constantFrom(1, 1, 1, 2, 0.5),
  advanceMs: fc.constantFrom(0, 0, 1, 100, 1_000, 5_000, 60_000),
});

describe('SpaceSaving: the heavy hitters of a decayed stream, bounded', () => {
  for (const halfLifeMs of [Infinity, 10_000, 700]) {
    it(`stays within its stated error against an exact count (half-life ${halfLifeMs} ms)`, () => {
      fc.assert(
        fc.property(
          fc.array(event, { maxLength: 300 }),
          fc.integer({ min: 1, max: 8 }),
          fc.integer({ min: 0, max: 30_000 }),
          (events, capacity, readAfterMs) => {
            const sketch = new SpaceSaving({ capacity, halfLifeMs });
            const exact = new Map<string, { t: number; w: number }[]>();
            let nowMs = 1_700_000_000_000;
            for (const e of events) {
              nowMs += e.advanceMs;
              sketch.add(`k${e.key}`, e.weight, nowMs);
              exact.set(`k${e.key}`, [...(exact.get(`k${e.key}`) ?? []), { t: nowMs, w: e.weight }]);
              assert.ok(sketch.size <= capacity, 'never more keys than the capacity');
            }
            const readMs = nowMs + readAfterMs;
            const decayed = (key: string): number =>
              (exact.get(key) ?? []).reduce(
                (n, x) => n + x.w * (halfLifeMs === Infinity ? 1 : 2 ** (-(readMs - x.t) / halfLifeMs)),
                0,
              );
            const total = [...exact.keys()].reduce((n, k) => n + decayed(k), 0);
            const min = sketch.minCount(readMs);
            const top = sketch.top(capacity, readMs);
            const monitored = new Set(top.map((h) => h.key));
            for (const h of top) {
              const truth = decayed(h.key);
              assert.ok(
                h.count >= truth || close(h.count, truth),
                `${h.key}: count ${h.count} below the truth ${truth}`,
              );
              assert.ok(
                h.count - h.error <= truth || close(h.count - h.error, truth),
                `${h.key}: count - error ${h.count - h.error} above the truth ${truth}`,
              );
              assert.ok(
                h.error <= min || close(h.error, min),
                `${h.key}: error ${h.error} above the smallest counter ${min}`,
              );
            }
            for (const key of exact.keys()) {
              if (!monitored.has(key))
                assert.ok(
                  decayed(key) <= min || close(decayed(key), min),
                  `${key} (true ${decayed(key)}) left out though above the smallest counter ${min}`,
                );
            }
            assert.ok(
              min <= total / capacity || close(min, total / capacity),
              `the smallest counter ${min} above total / capacity ${total / capacity}`,
            );
            for (let i = 1; i < top.length; i++) assert.ok(top[i - 1]!.count >= top[i]!.count, 'largest first');
          },
        ),
        { numRuns: runs(300) },
      );
    });
  }

  it('is exact while the keys fit, and orders them by count', () => {
    const sketch = new SpaceSaving({ capacity: 4, halfLifeMs: Infinity });
    for (const [key, n] of [
      ['a', 5],
      ['b', 2],
      ['c', 9],
    ] as const)
      for (let i = 0; i < n; i++) sketch.add(key, 1, 0);
    assert.deepEqual(sketch.top(10, 0), [
      { key: 'c', count: 9, error: 0 },
      { key: 'a', count: 5, error: 0 },
      { key: 'b', count: 2, error: 0 },
    ]);
    assert.equal(sketch.minCount(0), 0, 'no error bound until the table is full');
  });

  it('halves a count every half-life, and lets a fresh heavy key overtake an old one', () => {
    const sketch = new SpaceSaving({ capacity: 2, halfLifeMs: 1_000 });
    for (let i = 0; i < 8; i++) sketch.add('old', 1, 0);
    assert.equal(sketch.top(1, 1_000)[0]!.count, 4);
    assert.equal(sketch.top(1, 3_000)[0]!.count, 1);
    for (let i = 0; i < 3; i++) sketch.add('new', 1, 3_000);
    assert.deepEqual(
      sketch.top(2, 3_000).map((h) => h.key),
      ['new', 'old'],
    );
  });

  it('replaces the smallest counter and carries it as the newcomer error (space-saving step)', () => {
    const sketch = new SpaceSaving({ capacity: 2, halfLifeMs: Infinity });
    sketch.add('a', 3, 0);
    sketch.add('b', 1, 0);
    sketch.add('c', 1, 0);
    assert.deepEqual(sketch.top(2, 0), [
      { key: 'a', count: 3, error: 0 },
      { key: 'c', count: 2, error: 1 },
    ]);
  });

  it('keeps counts finite over a long run (the forward decay rescales) and takes time going backwards as now', () => {
    const sketch = new SpaceSaving({ capacity: 3, halfLifeMs: 10 });
    let t = 0;
    for (let i = 0; i < 5_000; i++) sketch.add(`k${i % 3}`, 1, (t += 7));
    sketch.add('k0', 1, t - 1_000_000);
    const top = sketch.top(3, t);
    for (const h of top) assert.ok(Number.isFinite(h.count) && h.count > 0 && h.count < 10, `${h.key}: ${h.count}`);
    assert.ok(
      top.find((h) => h.key === 'k0')!.count > top.find((h) => h.key === 'k1')!.count,
      'the late event counted as now',
    );
  });

  it('refuses a capacity or half-life that cannot work', () => {
    assert.throws(() => new SpaceSaving({ capacity: 0, halfLifeMs: 1 }), /capacity/);
    assert.throws(() => new SpaceSaving({ capacity: 2.5, halfLifeMs: 1 }), /capacity/);
    assert.throws(() => new SpaceSaving({ capacity: 2, halfLifeMs: 0 }), /halfLifeMs/);
  });
});

describe('SpaceSaving ties', () => {
  it('breaks ties by a fixed-seed hash of the key: keys of equal count list, and are evicted, alike in any arrival order', () => {
    const keys = Array.from({ length: 16 }, (_, i) => `ip:192.0.2.${i}`);
    const orders = [keys, [...keys].reverse(), [...keys.slice(9), ...keys.slice(0, 9)]];
    const results = orders.map((order) => {
      const sketch = new SpaceSaving({ capacity: 16, halfLifeMs: Infinity });
      for (const key of order) sketch.add(key, 1, 0);
      const listed = sketch.top(16, 0).map((h) => h.key);
      // A new key in a full table takes the place of one of the sixteen tied at the smallest count.
      sketch.add('ip:198.51.100.7', 1, 0);
      const kept = new Set(sketch.top(16, 0).map((h) => h.key));
      return { listed, evicted: keys.filter((k) => !kept.has(k)) };
    });
    for (const r of results.slice(1)) assert.deepEqual(r, results[0]);
    assert.equal(results[0]!.evicted.length, 1);
  });

  it('ranks equal counts by tieRank, a pure function of the key', () => {
    const sketch = new SpaceSaving({ capacity: 8, halfLifeMs: 10_000 });
    for (const key of ['b', 'a', 'c', 'd']) sketch.add(key, 1, 0);
    const top = sketch.top(4, 0).map((h) => h.key);
    assert.deepEqual(
      top,
      [...top].sort((x, y) => tieRank(x) - tieRank(y)),
    );
    assert.equal(tieRank('ip:192.0.2.1'), tieRank('ip:192.0.2.1'));
    assert.equal(tieRank(''), 0x811c9dc5, 'the seed is fixed: FNV-1a offset basis');
  });
});
