import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { FloodgateError } from '../../src/core/errors.js';
import { SmoothRateLimiter } from '../../src/core/smooth/smooth-rate-limiter.js';

/** A sleep that moves `clock` and records each request, never sleeping for real. */
function fakeSleep(clock: ManualClock): { sleep: (ms: number) => Promise<void>; sleptMs: number[] } {
  const sleptMs: number[] = [];
  return {
    sleptMs,
    sleep: async (ms) => {
      sleptMs.push(ms);
      clock.advance(ms);
    },
  };
}

function rejectsOption(option: string): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof FloodgateError);
    assert.equal(error.code, 'INVALID_OPTION');
    assert.equal(error.option, `SmoothRateLimiter.${option}`);
    return true;
  };
}

describe('SmoothRateLimiter arguments', () => {
  const clock = new ManualClock(0);

  test('rates must be above 0 and not NaN; Infinity is allowed', () => {
    for (const rate of [0, -0, -1, NaN, -Infinity, '5' as unknown as number]) {
      assert.throws(() => SmoothRateLimiter.bursty(rate, { clock }), rejectsOption('permitsPerSecond'));
      assert.throws(() => SmoothRateLimiter.warmingUp(rate, 1000, { clock }), rejectsOption('permitsPerSecond'));
      assert.throws(() => SmoothRateLimiter.bursty(1, { clock }).setRate(rate), rejectsOption('permitsPerSecond'));
    }
    assert.equal(SmoothRateLimiter.bursty(Infinity, { clock }).getRate(), Infinity);
    assert.equal(SmoothRateLimiter.bursty(Number.MIN_VALUE, { clock }).getRate(), 0, 'Guava reads 1e6 / Infinity');
  });

  test('permits must be whole and at least 1', async () => {
    const limiter = SmoothRateLimiter.bursty(1, { clock, sleep: fakeSleep(clock).sleep });
    for (const permits of [0, -1, 1.5, NaN, Infinity]) {
      await assert.rejects(limiter.acquire(permits), rejectsOption('permits'));
      await assert.rejects(limiter.tryAcquire(permits), rejectsOption('permits'));
      assert.throws(() => limiter.reserveAt(permits, 0), rejectsOption('permits'));
      assert.throws(() => limiter.tryReserveAt(permits, 0, 0), rejectsOption('permits'));
    }
  });

  test('warm-up must be at least 1 µs (Guava would stop limiting); cold factor at least 1; burst seconds finite and at least 0', () => {
    for (const warmupMs of [-1, NaN, -Infinity, 0, 0.0004]) {
      assert.throws(() => SmoothRateLimiter.warmingUp(1, warmupMs, { clock }), rejectsOption('warmupMs'));
    }
    SmoothRateLimiter.warmingUp(1, 0.001, { clock });
    for (const coldFactor of [0.5, NaN, Infinity]) {
      assert.throws(() => SmoothRateLimiter.warmingUp(1, 10, { clock, coldFactor }), rejectsOption('coldFactor'));
    }
    for (const maxBurstSeconds of [-1, NaN, Infinity]) {
      assert.throws(() => SmoothRateLimiter.bursty(1, { clock, maxBurstSeconds }), rejectsOption('maxBurstSeconds'));
    }
  });

  test('options, clock and sleep are checked', () => {
    assert.throws(() => SmoothRateLimiter.bursty(1, null as never), rejectsOption('options'));
    assert.throws(() => SmoothRateLimiter.bursty(1, { clock: {} as never }), rejectsOption('clock'));
    assert.throws(() => SmoothRateLimiter.bursty(1, { clock, sleep: 5 as never }), rejectsOption('sleep'));
  });

  test('timeouts may be negative (counted as 0) but not NaN; nowMicros must be finite', async () => {
    const limiter = SmoothRateLimiter.bursty(1, { clock, sleep: fakeSleep(clock).sleep });
    await assert.rejects(limiter.tryAcquire(1, NaN), rejectsOption('timeoutMs'));
    assert.throws(() => limiter.tryReserveAt(1, NaN, 0), rejectsOption('timeoutMicros'));
    assert.throws(() => limiter.reserveAt(1, NaN), rejectsOption('nowMicros'));
    assert.throws(() => limiter.setRateAt(1, Infinity), rejectsOption('nowMicros'));
    assert.equal(limiter.tryReserveAt(1, -5, 0), 0);
  });
});

describe('SmoothRateLimiter behaviour', () => {
  test('reserveAt pays for each request on the next one', () => {
    const limiter = SmoothRateLimiter.bursty(5, { clock: new ManualClock(0) });
    assert.equal(limiter.reserveAt(10, 0), 0);
    assert.equal(limiter.reserveAt(1, 0), 2_000_000);
    assert.equal(limiter.reserveAt(1, 1_000_000), 1_200_000);
  });

  test('tryReserveAt refuses without reserving, and grants within the timeout', () => {
    const limiter = SmoothRateLimiter.bursty(5, { clock: new ManualClock(0) });
    assert.equal(limiter.tryReserveAt(1, 0, 0), 0);
    assert.equal(limiter.tryReserveAt(1, 199_999, 0), false);
    assert.equal(limiter.tryReserveAt(1, 200_000, 0), 200_000);
    assert.equal(limiter.tryReserveAt(1, Infinity, 0), 400_000);
  });

  test('tryAcquire sleeps only when it grants, and acquire returns seconds', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const { sleep, sleptMs } = fakeSleep(clock);
    const limiter = SmoothRateLimiter.bursty(4, { clock, sleep });
    assert.equal(await limiter.acquire(), 0);
    assert.equal(await limiter.tryAcquire(), false);
    assert.equal(await limiter.tryAcquire(1, 250), true);
    assert.equal(await limiter.acquire(2), 0.25);
    assert.deepEqual(sleptMs, [0, 250, 250]);
  });

  test('a clock that goes back creates no permits and waits from the next-free moment', () => {
    const limiter = SmoothRateLimiter.bursty(1, { clock: new ManualClock(10_000) });
    assert.equal(limiter.reserveAt(1, 10_000_000), 0);
    assert.equal(limiter.reserveAt(1, 5_000_000), 6_000_000);
    assert.equal(limiter.reserveAt(1, 12_000_000), 0);
    assert.equal(limiter.reserveAt(1, 12_000_000), 1_000_000);
  });

  test('setRateAt keeps the share of stored permits and charges the reservation made before it', () => {
    const limiter = SmoothRateLimiter.bursty(2, { clock: new ManualClock(0) });
    limiter.reserveAt(1, 0);
    assert.equal(limiter.reserveAt(1, 10_000_000), 0, 'two permits stored, one spent');
    limiter.setRateAt(10, 10_000_000);
    assert.equal(limiter.getRate(), 10);
    for (let i = 0; i < 5; i++) assert.equal(limiter.reserveAt(1, 10_000_000), 0, 'half of 10 stored');
    assert.equal(limiter.reserveAt(1, 10_000_000), 0);
    assert.equal(limiter.reserveAt(1, 10_000_000), 100_000);
  });

  test('a clock in fractional ms is read as whole microseconds despite float noise', async () => {
    assert.ok(1.005 * 1000 < 1005, 'the product lands just below a whole µs');
    const clock = new ManualClock(0);
    const { sleep, sleptMs } = fakeSleep(clock);
    const limiter = SmoothRateLimiter.bursty(1000, { clock, sleep });
    limiter.reserveAt(1, 0);
    limiter.reserveAt(1, 0);
    clock.set(1.005);
    assert.equal(await limiter.tryAcquire(1, 0.995), true, 'read as 1005 µs, so 995 µs is enough');
    assert.equal(sleptMs[0]! * 1000, 995);
  });

  test('the shortest warm-up accepted (1 µs) keeps limiting after time passes (Guava issue #2730 stops)', () => {
    const limiter = SmoothRateLimiter.warmingUp(1, 0.001, { clock: new ManualClock(0) });
    assert.equal(limiter.reserveAt(1, 0), 0);
    assert.equal(limiter.reserveAt(1, 0), 1_000_000);
    assert.equal(limiter.reserveAt(1_000, 3_000_000), 0, 'the first request after idling never waits');
    // 1,000 permits at 1 per second are owed by the next caller: at least 999 s of waiting.
    assert.ok(limiter.reserveAt(1, 3_000_000) >= 999_000_000);
  });
});
