import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NearLimit } from '../../src/dashboard/near-limit.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

describe('NearLimit: the keys nearest their limit lately, bounded', () => {
  it('ranks by the share used at the latest decision, and follows a key back down', () => {
    const near = new NearLimit({ capacity: 4, staleMs: 10_000 });
    near.observe('a', { limit: 10, remaining: 4 }, 0);
    near.observe('b', { limit: 10, remaining: 0 }, 0);
    near.observe('c', { limit: 100, remaining: 10 }, 0);
    assert.deepEqual(
      near.top(10, 0).map((k) => [k.key, k.usedShare]),
      [
        ['b', 1],
        ['c', 0.9],
        ['a', 0.6],
      ],
    );
    near.observe('b', { limit: 10, remaining: 9 }, 1_000);
    assert.deepEqual(
      near.top(10, 1_000).map((k) => k.key),
      ['c', 'a', 'b'],
      "b's latest decision left it far from its limit",
    );
  });

  it('lets in a new key only at minShare or above', () => {
    const near = new NearLimit({ capacity: 4, staleMs: 10_000, minShare: 0.5 });
    near.observe('far', { limit: 10, remaining: 8 }, 0);
    assert.equal(near.size, 0);
    near.observe('close', { limit: 10, remaining: 5 }, 0);
    assert.equal(near.size, 1);
  });

  it('forgets a key after staleMs, and a stale key gives its place first', () => {
    const near = new NearLimit({ capacity: 2, staleMs: 1_000 });
    near.observe('old', { limit: 10, remaining: 0 }, 0);
    near.observe('mid', { limit: 10, remaining: 1 }, 900);
    near.observe('new', { limit: 10, remaining: 4 }, 1_500);
    assert.deepEqual(
      near.top(10, 1_500).map((k) => k.key),
      ['mid', 'new'],
      'the stale full key went before the fresher ones',
    );
    assert.deepEqual(
      near.top(10, 2_600).map((k) => k.key),
      [],
    );
    assert.equal(near.size, 0, 'reading drops stale keys');
  });

  it('never holds more than its capacity, and holds the most used keys of a burst of fresh ones', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: fc.integer({ min: 0, max: 50 }), remaining: fc.integer({ min: 0, max: 10 }) }), {
          maxLength: 200,
        }),
        fc.integer({ min: 1, max: 6 }),
        (steps, capacity) => {
          const near = new NearLimit({ capacity, staleMs: 1e9, minShare: 0 });
          const latest = new Map<string, number>();
          for (const s of steps) {
            const share = 1 - s.remaining / 10;
            near.observe(`k${s.key}`, { limit: 10, remaining: s.remaining }, 0);
            latest.set(`k${s.key}`, share);
            assert.ok(near.size <= capacity);
            const held = near.top(capacity, 0);
            if (share > 0 && !held.some((k) => k.key === `k${s.key}`)) {
              assert.equal(held.length, capacity, 'a key is left out only when the table is full');
              for (const k of held)
                assert.ok(k.usedShare >= share, `left out at ${share} while ${k.key} holds ${k.usedShare}`);
            }
          }
          const top = near.top(capacity, 0);
          for (const k of top) assert.equal(k.usedShare, latest.get(k.key), 'a held key shows its latest decision');
        },
      ),
      { numRuns: runs(100) },
    );
  });
});
