import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { SmoothRateLimiter } from '../../src/core/smooth/smooth-rate-limiter.js';
import { FakeStopwatch } from './fake-stopwatch.js';
import { GUAVA_VECTORS, GUAVA_VECTORS_FILE, type GuavaOp } from './guava-vectors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const sharedPath = path.resolve(here, '../../../..', '../shared/reference/guava-vectors.json');

function rateOf(value: number | string | undefined): number {
  if (value === 'Infinity') return Infinity;
  if (value === 'MIN_VALUE') return Number.MIN_VALUE; // Java's Double.MIN_VALUE, 4.9e-324
  if (typeof value === 'number') return value;
  throw new Error(`unknown rate ${String(value)}`);
}

/** Runs one op; returns the limiter (created or unchanged). */
async function step(
  op: GuavaOp,
  limiter: SmoothRateLimiter | undefined,
  time: FakeStopwatch,
): Promise<SmoothRateLimiter | undefined> {
  const options = { clock: time.clock, sleep: time.sleep };
  switch (op.op) {
    case 'create':
      return SmoothRateLimiter.bursty(rateOf(op.rate), options);
    case 'createWarmingUp':
      return SmoothRateLimiter.warmingUp(rateOf(op.rate), op.warmupMs!, { ...options, coldFactor: op.coldFactor! });
    case 'sleepMillis':
      time.sleepMillis(op.ms!);
      return limiter;
    case 'advanceNanos':
      time.advanceNanos(BigInt(op.nanos!));
      return limiter;
  }
  assert.ok(limiter, `${op.op} before create`);
  switch (op.op) {
    case 'acquire':
      for (let i = 0; i < (op.repeat ?? 1); i++) {
        const logged = time.eventMicros.length;
        const seconds: number = await limiter.acquire(op.permits ?? 1);
        assert.equal(seconds, time.eventMicros[logged]! / 1e6, 'acquire returns the seconds it slept');
      }
      return limiter;
    case 'tryAcquire':
      assert.equal(await limiter.tryAcquire(op.permits ?? 1, op.timeoutMicros! / 1000), op.expect, JSON.stringify(op));
      return limiter;
    case 'setRate':
      limiter.setRate(rateOf(op.rate));
      return limiter;
    default:
      throw new Error(`unknown op ${op.op}`);
  }
}

describe('Guava RateLimiterTest vectors', () => {
  test('the copy matches shared/reference when that is present', (t) => {
    if (!existsSync(sharedPath)) return t.skip('shared/reference not beside the clone');
    assert.deepEqual(
      JSON.parse(readFileSync(GUAVA_VECTORS_FILE, 'utf8')),
      JSON.parse(readFileSync(sharedPath, 'utf8')),
    );
  });

  test('the file holds the known tests', () => {
    assert.ok(Object.keys(GUAVA_VECTORS).length >= 22);
  });

  for (const [name, vector] of Object.entries(GUAVA_VECTORS)) {
    test(name, async () => {
      const time = new FakeStopwatch();
      let limiter: SmoothRateLimiter | undefined;
      for (const op of vector.ops) limiter = await step(op, limiter, time);
      assert.deepEqual(time.events, vector.events);
      assert.deepEqual(time.eventMicros, vector.eventMicros);
    });
  }
});
