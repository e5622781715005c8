import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RefusalRing, type Refusal } from '../../src/dashboard/refusals.js';

function refusal(i: number): Refusal {
  return {
    route: 'api',
    rule: 'per-ip',
    key: `ip:192.0.2.${i}`,
    limit: 10,
    remaining: 0,
    retryAfterMs: 100 * i,
    reason: 'limit',
    atMs: 1_000 * i,
  };
}

describe('RefusalRing: the latest refusals, newest first, in fixed memory', () => {
  it('returns what it holds newest first, fewer than asked when it holds fewer', () => {
    const ring = new RefusalRing(5);
    assert.deepEqual(ring.latest(3), []);
    for (let i = 1; i <= 3; i++) ring.record(refusal(i));
    assert.deepEqual(
      ring.latest(10).map((r) => r.key),
      ['ip:192.0.2.3', 'ip:192.0.2.2', 'ip:192.0.2.1'],
    );
  });

  it('overwrites the oldest once full, and counts every refusal', () => {
    const ring = new RefusalRing(3);
    for (let i = 1; i <= 7; i++) ring.record(refusal(i));
    assert.deepEqual(
      ring.latest(10).map((r) => r.retryAfterMs),
      [700, 600, 500],
    );
    assert.equal(ring.total, 7);
    assert.deepEqual(
      ring.latest(2).map((r) => r.atMs),
      [7_000, 6_000],
    );
  });

  it('refuses a capacity below 1', () => {
    assert.throws(() => new RefusalRing(0), /capacity/);
  });
});
