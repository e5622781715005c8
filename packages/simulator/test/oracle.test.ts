import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { maxInAnyWindow, percentiles, scoreLane, type Arrivals, type PolicyPromise } from '../src/index.js';

/** Arrivals on the given keys at the given times, cost 1 unless said. */
function arrivalsOf(rows: Array<[atMs: number, key: string, cost?: number]>): Arrivals {
  const keys: string[] = [];
  const ids = rows.map(([, key]) => (keys.includes(key) ? keys.indexOf(key) : keys.push(key) - 1));
  return {
    length: rows.length,
    atMs: Float64Array.from(rows.map((r) => r[0])),
    keyIds: Int32Array.from(ids),
    costs: Float64Array.from(rows.map((r) => r[2] ?? 1)),
    keys,
  };
}

const promise: PolicyPromise = { windowMs: 100, maxAdmitted: 3, guaranteed: 3, limit: 3 };

describe('the oracle', () => {
  it('finds the most admitted in any window (t - windowMs, t], per key', () => {
    const arrivals = arrivalsOf([
      [0, 'a'],
      [50, 'a'],
      [99, 'a'],
      [100, 'a'],
      [150, 'a'],
      [199, 'b'],
      [200, 'a'],
    ]);
    const admitted = Float64Array.from(arrivals.atMs);
    const { score, hottest } = scoreLane(arrivals, admitted, promise);
    // (0, 100] holds 50, 99, 100; (50, 150] holds 99, 100, 150; at 100 the one at 0 has left.
    assert.equal(score.maxInWindow, 3);
    assert.equal(score.overPromise, 0);
    assert.equal(score.hottestKey, 'a');
    assert.deepEqual([...hottest.atMs], [0, 50, 99, 100, 150, 200]);
    assert.equal(maxInAnyWindow(hottest, 101), 4, 'a window of 101 ms holds 0 through 100');
  });

  it('counts as over-admitted what an exact limiter holding the promise would have refused', () => {
    const arrivals = arrivalsOf([
      [0, 'a'],
      [10, 'a'],
      [20, 'a'],
      [30, 'a'],
      [40, 'a'],
      [105, 'a'],
      [111, 'a'],
    ]);
    const admitted = Float64Array.from(arrivals.atMs);
    const { score } = scoreLane(arrivals, admitted, promise);
    assert.equal(score.maxInWindow, 5);
    // Kept: 0, 10, 20; over: 30, 40; at 105 the one at 0 has left (kept 10, 20, 105); at 111 so has 10.
    assert.equal(score.overPromise, 2);
  });

  it('weighs by cost and orders admissions made out of arrival order', () => {
    const arrivals = arrivalsOf([
      [0, 'a', 2],
      [1, 'a', 2],
      [2, 'a', 1],
    ]);
    const admitted = Float64Array.from([30, 10, 20]);
    const { score, hottest } = scoreLane(arrivals, admitted, promise);
    assert.deepEqual([...hottest.atMs], [10, 20, 30]);
    assert.deepEqual([...hottest.costs], [2, 1, 2]);
    assert.equal(score.maxInWindow, 5);
    assert.equal(score.overPromise, 2);
    assert.equal(score.admittedCost, 5);
    assert.deepEqual(score.waitMs, { p50: 18, p90: 30, p99: 30, max: 30 });
  });

  it('calls a refusal wrong only when the window had room under the guarantee', () => {
    const arrivals = arrivalsOf([
      [0, 'a'],
      [1, 'a'],
      [2, 'a'],
      [3, 'a'],
      [50, 'b'],
      [120, 'a'],
      [130, 'a', 3],
    ]);
    const admitted = Float64Array.from([0, 1, 2, NaN, NaN, NaN, NaN]);
    const { score } = scoreLane(arrivals, admitted, promise);
    // 3: the window is full (right); b at 50: empty window (wrong); a at 120: (20, 120] is empty (wrong);
    // a at 130 costs 3 and the window is empty: 3 fits (wrong).
    assert.equal(score.refused, 4);
    assert.equal(score.wronglyRefused, 3);
    const noPromise = scoreLane(arrivals, admitted, { ...promise, guaranteed: undefined }).score;
    assert.equal(noPromise.wronglyRefused, undefined);
  });

  it('takes nearest-rank percentiles', () => {
    const sorted = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    assert.deepEqual(percentiles(sorted), { p50: 50, p90: 90, p99: 99, max: 100 });
    assert.deepEqual(percentiles(new Float64Array(0)), { p50: 0, p90: 0, p99: 0, max: 0 });
  });
});
