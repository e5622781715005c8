import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LONG_MAX,
  LONG_MIN,
  longFromDouble,
  saturatedAdd,
  wrappingAdd,
  wrappingSubtract,
} from '../../src/core/smooth/java-long.js';
import { sleepInSteps, TIMER_MAX_MS } from '../../src/core/smooth/sleep.js';

describe('java-long', () => {
  test('longFromDouble casts like Java: truncates, NaN is 0, saturates', () => {
    const cases: [number, bigint][] = [
      [1.9, 1n],
      [-1.9, -1n],
      [NaN, 0n],
      [Infinity, LONG_MAX],
      [-Infinity, LONG_MIN],
      [2 ** 63, LONG_MAX],
      [-(2 ** 63), LONG_MIN],
      [2 ** 62, 2n ** 62n],
    ];
    for (const [x, expected] of cases) assert.equal(longFromDouble(x), expected, String(x));
  });

  test('plain adds wrap and saturated adds clamp', () => {
    assert.equal(wrappingAdd(LONG_MAX, 1n), LONG_MIN);
    assert.equal(wrappingSubtract(LONG_MIN, 1n), LONG_MAX);
    assert.equal(saturatedAdd(LONG_MAX, 1n), LONG_MAX);
    assert.equal(saturatedAdd(LONG_MIN, -1n), LONG_MIN);
    assert.equal(saturatedAdd(2n, 3n), 5n);
  });
});

describe('sleepInSteps', () => {
  async function steps(ms: number): Promise<number[]> {
    const taken: number[] = [];
    await sleepInSteps(ms, async (stepMs) => void taken.push(stepMs));
    return taken;
  }

  test('splits waits longer than setTimeout allows and rounds up', async () => {
    assert.deepEqual(await steps(0), []);
    assert.deepEqual(await steps(1.2), [2]);
    assert.deepEqual(await steps(TIMER_MAX_MS), [TIMER_MAX_MS]);
    assert.deepEqual(await steps(2 * TIMER_MAX_MS + 5), [TIMER_MAX_MS, TIMER_MAX_MS, 5]);
  });
});
