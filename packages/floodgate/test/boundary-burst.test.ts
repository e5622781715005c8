import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Limiter, ManualClock, MemoryStore, fixedWindow, slidingWindowLog, type Algorithm } from '../src/index.js';
import { runs } from './support/sweep.js';

const limit = 10;
const windowMs = 1000;

/** admittedTimes sends one request of cost 1 at each time (in order) and returns the admitted ones. */
function admittedTimes(policy: Algorithm, times: readonly number[]): number[] {
  const clock = new ManualClock();
  const limiter = new Limiter({ policy, clock });
  return times.filter((t) => (clock.set(t), limiter.consumeSync('k').allowed));
}

/** mostInAnySpan returns the most admitted requests in any span [s, s + spanMs). */
function mostInAnySpan(admitted: readonly number[], spanMs: number): number {
  let most = 0;
  for (const start of admitted) most = Math.max(most, admitted.filter((t) => t >= start && t < start + spanMs).length);
  return most;
}

describe('a burst across a window boundary', () => {
  // Ten requests in the last 10 ms of the window [0, 1000), ten in the first 10 ms of [1000, 2000).
  const burst = Array.from({ length: 20 }, (_, i) => 990 + i);

  test('the fixed window admits twice its limit within 20 ms', () => {
    const admitted = admittedTimes(fixedWindow({ limit, windowMs }), burst);
    assert.deepEqual(admitted, burst);
    assert.equal(mostInAnySpan(admitted, windowMs), 2 * limit);
  });

  test('the sliding log admits its limit and no more', () => {
    const admitted = admittedTimes(slidingWindowLog({ limit, windowMs }), burst);
    assert.deepEqual(admitted, burst.slice(0, 10));
  });

  // Bursts two seconds apart, each from 50 ms before a window boundary to 50 ms after, every 5 ms.
  const bursts = Array.from({ length: 5 }, (_, k) =>
    Array.from({ length: 20 }, (_, i) => 2000 * k + 950 + 5 * i),
  ).flat();

  test('repeated bursts: the fixed window reaches 2x its limit in a window-length span each time', () => {
    const admitted = admittedTimes(fixedWindow({ limit, windowMs }), bursts);
    assert.equal(admitted.length, 5 * 2 * limit);
    assert.equal(mostInAnySpan(admitted, windowMs), 2 * limit);
  });

  test('repeated bursts: the sliding log never admits more than its limit in a window-length span', () => {
    const admitted = admittedTimes(slidingWindowLog({ limit, windowMs }), bursts);
    assert.equal(admitted.length, 5 * limit);
    assert.equal(mostInAnySpan(admitted, windowMs), limit);
  });

  test('on any traffic (clock forward only): fixed window at most 2x the limit per span, sliding log at most 1x', () => {
    const traffic = fc.array(
      fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 1500 })),
      {
        minLength: 1,
        maxLength: 120,
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), traffic, (start, steps) => {
        let t = start;
        const times = steps.map((dt) => (t += dt));
        const fixed = new MemoryStore().bind(fixedWindow({ limit, windowMs }));
        const log = new MemoryStore().bind(slidingWindowLog({ limit, windowMs }));
        const byFixed = times.filter((at) => fixed.consume('k', 1, at).allowed);
        const byLog = times.filter((at) => log.consume('k', 1, at).allowed);
        assert.ok(mostInAnySpan(byFixed, windowMs) <= 2 * limit);
        assert.ok(mostInAnySpan(byLog, windowMs) <= limit);
        // Both start empty, so both admit the first request.
        assert.equal(byFixed[0], times[0]);
        assert.equal(byLog[0], times[0]);
      }),
      { numRuns: runs(200) },
    );
  });
});
