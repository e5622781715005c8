import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '../src/index.js';

type Case = [what: string, make: () => unknown, option: string];

const bad: Case[] = [
  ['zero capacity', () => tokenBucket({ capacity: 0, refillPerSecond: 1 }), 'tokenBucket.capacity'],
  ['negative refill', () => tokenBucket({ capacity: 1, refillPerSecond: -1 }), 'tokenBucket.refillPerSecond'],
  ['NaN capacity', () => tokenBucket({ capacity: Number.NaN, refillPerSecond: 1 }), 'tokenBucket.capacity'],
  ['infinite refill', () => tokenBucket({ capacity: 1, refillPerSecond: Infinity }), 'tokenBucket.refillPerSecond'],
  ['string capacity', () => tokenBucket({ capacity: '5' as never, refillPerSecond: 1 }), 'tokenBucket.capacity'],
  ['no options', () => tokenBucket(undefined as never), 'tokenBucket'],
  ['zero leak', () => leakyBucket({ capacity: 1, leakPerSecond: 0 }), 'leakyBucket.leakPerSecond'],
  ['window under 1 ms', () => fixedWindow({ limit: 1, windowMs: 0.5 }), 'fixedWindow.windowMs'],
  ['zero limit', () => fixedWindow({ limit: 0, windowMs: 1000 }), 'fixedWindow.limit'],
  ['fractional log limit', () => slidingWindowLog({ limit: 2.5, windowMs: 1000 }), 'slidingWindowLog.limit'],
  ['huge log limit', () => slidingWindowLog({ limit: 1e7, windowMs: 1000 }), 'slidingWindowLog.limit'],
  ['infinite window', () => slidingWindowLog({ limit: 1, windowMs: Infinity }), 'slidingWindowLog.windowMs'],
  [
    'sub-windows not dividing',
    () => slidingWindowCounter({ limit: 1, windowMs: 1000, subWindows: 3 }),
    'slidingWindowCounter.subWindows',
  ],
  [
    'zero sub-windows',
    () => slidingWindowCounter({ limit: 1, windowMs: 1000, subWindows: 0 }),
    'slidingWindowCounter.subWindows',
  ],
  ['negative burst', () => gcra({ rate: 1, periodMs: 1000, maxBurst: -1 }), 'gcra.maxBurst'],
  ['zero rate', () => gcra({ rate: 0, periodMs: 1000, maxBurst: 1 }), 'gcra.rate'],
];

describe('policy options are checked', () => {
  for (const [what, make, option] of bad) {
    test(`${what} is refused, naming ${option}`, () => {
      assert.throws(make, (e: unknown) => {
        assert.ok(e instanceof FloodgateError);
        assert.equal(e.code, 'INVALID_OPTION');
        assert.equal(e.option, option);
        assert.match(e.message, new RegExp(option.replace('.', '\\.')));
        return true;
      });
    });
  }

  test('the sliding log takes whole costs only', () => {
    const log = slidingWindowLog({ limit: 3, windowMs: 1000 });
    assert.throws(
      () => log.checkCost(1.5),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_COST',
    );
    assert.doesNotThrow(() => log.checkCost(3));
    assert.throws(
      () => log.checkCost(4),
      (e) => e instanceof FloodgateError && e.code === 'COST_EXCEEDS_LIMIT',
    );
  });
});
