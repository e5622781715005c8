import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ManualClock } from '../../src/core/clock.js';
import { SmoothRateLimiter } from '../../src/core/smooth/smooth-rate-limiter.js';
import { runs } from '../support/sweep.js';

// A reference model of Guava's RateLimiter arithmetic, written straight from REFERENCE.md and
// sharing no code with the implementation. Java longs are bigints; doubles are numbers.

const LONG_MAX = 2n ** 63n - 1n;
const LONG_MIN = -(2n ** 63n);
const javaLong = (d: number): bigint =>
  Number.isNaN(d) ? 0n : d >= 2 ** 63 ? LONG_MAX : d <= -(2 ** 63) ? LONG_MIN : BigInt(Math.trunc(d));
const wrap = (x: bigint): bigint => BigInt.asIntN(64, x);
const clamp = (x: bigint): bigint => (x > LONG_MAX ? LONG_MAX : x < LONG_MIN ? LONG_MIN : x);

type Shape = { kind: 'bursty'; burstSeconds: number } | { kind: 'warm'; warmupMicros: number; coldFactor: number };

class GuavaModel {
  stored = 0;
  max = 0;
  interval = 0;
  next = 0n;
  threshold = 0;
  slope = 0;

  constructor(
    readonly shape: Shape,
    rate: number,
    now: bigint,
  ) {
    this.setRate(rate, now);
  }

  private catchUp(now: bigint): void {
    if (!(now > this.next)) return;
    const coolDown = this.shape.kind === 'bursty' ? this.interval : this.shape.warmupMicros / this.max;
    this.stored = Math.min(this.max, this.stored + Number(wrap(now - this.next)) / coolDown);
    this.next = now;
  }

  setRate(rate: number, now: bigint): void {
    this.catchUp(now);
    this.interval = 1e6 / rate;
    const oldMax = this.max;
    if (this.shape.kind === 'bursty') {
      this.max = this.shape.burstSeconds * rate;
      this.stored = oldMax === Infinity ? this.max : oldMax === 0 ? 0 : (this.stored * this.max) / oldMax;
      return;
    }
    const w = this.shape.warmupMicros;
    const cold = this.interval * this.shape.coldFactor;
    this.threshold = (0.5 * w) / this.interval;
    this.max = this.threshold + (2 * w) / (this.interval + cold);
    this.slope = (cold - this.interval) / (this.max - this.threshold);
    this.stored = oldMax === Infinity ? 0 : oldMax === 0 ? this.max : (this.stored * this.max) / oldMax;
  }

  private storedCost(take: number): bigint {
    if (this.shape.kind === 'bursty') return 0n;
    const above = this.stored - this.threshold;
    let trapezoid = 0n;
    if (above > 0) {
      const takeAbove = Math.min(above, take);
      const left = this.interval + above * this.slope;
      const right = this.interval + (above - takeAbove) * this.slope;
      trapezoid = javaLong((takeAbove * (left + right)) / 2);
      take -= takeAbove;
    }
    return wrap(trapezoid + javaLong(this.interval * take));
  }

  reserve(permits: number, now: bigint): bigint {
    this.catchUp(now);
    const answer = this.next;
    const spend = Math.min(permits, this.stored);
    const cost = wrap(this.storedCost(spend) + javaLong((permits - spend) * this.interval));
    this.next = clamp(this.next + cost);
    this.stored -= spend;
    const wait = wrap(answer - now);
    return wait > 0n ? wait : 0n;
  }

  tryReserve(permits: number, timeout: bigint, now: bigint): bigint | false {
    const t = timeout > 0n ? timeout : 0n;
    if (wrap(this.next - t) > now) return false;
    return this.reserve(permits, now);
  }

  rate(): number {
    return 1e6 / this.interval;
  }
}

const rates = fc.oneof(
  fc.double({ min: 1e-3, max: 1e6, noNaN: true }),
  fc.constantFrom(Infinity, Number.MIN_VALUE, 1e-12, 1e-9, 0.5, 1, 2, 5, 10, 1000, 333_333, 1e6),
);
const shapes: fc.Arbitrary<{ shape: Shape; warmupMs: number }> = fc.oneof(
  fc.double({ min: 0, max: 10, noNaN: true }).map((burstSeconds) => ({
    shape: { kind: 'bursty' as const, burstSeconds },
    warmupMs: 0,
  })),
  fc
    .record({
      warmupMs: fc.oneof(fc.constantFrom(0.001, 1, 500, 4000), fc.integer({ min: 1, max: 10_000_000 })),
      coldFactor: fc.oneof(fc.constantFrom(1, 3, 10), fc.double({ min: 1, max: 50, noNaN: true })),
    })
    .map(({ warmupMs, coldFactor }) => ({
      shape: { kind: 'warm' as const, warmupMicros: Number(javaLong(warmupMs * 1000)), coldFactor },
      warmupMs,
    })),
);
const permits = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constantFrom(1000, 2147483647));
const timeoutsMicros = fc.oneof(
  fc.integer({ min: -1_000_000, max: 5_000_000 }),
  fc.constantFrom(0, Infinity, -Infinity, 9.3e18, -9.3e18),
);

function create(
  shape: Shape,
  warmupMs: number,
  rate: number,
  clock: ManualClock,
  sleep?: (ms: number) => Promise<void>,
) {
  return shape.kind === 'bursty'
    ? SmoothRateLimiter.bursty(rate, { maxBurstSeconds: shape.burstSeconds, clock, sleep })
    : SmoothRateLimiter.warmingUp(rate, warmupMs, { coldFactor: shape.coldFactor, clock, sleep });
}

describe('SmoothRateLimiter against a reference model of Guava', () => {
  test('the synchronous twins, with time that jumps both ways', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), permits }),
      fc.record({ kind: fc.constant('tryReserve' as const), permits, timeout: timeoutsMicros }),
      fc.record({ kind: fc.constant('setRate' as const), rate: rates }),
    );
    const stepMicros = fc.oneof(
      fc.integer({ min: 0, max: 3_000_000 }),
      fc.integer({ min: -1_000_000, max: 0 }),
      fc.integer({ min: -3, max: 3 }),
    );
    fc.assert(
      fc.property(
        shapes,
        rates,
        fc.constantFrom(0, 1_700_000_000_000),
        fc.array(fc.tuple(stepMicros, op), { maxLength: 40 }),
        ({ shape, warmupMs }, rate, startMs, ops) => {
          let now = startMs * 1000;
          const limiter = create(shape, warmupMs, rate, new ManualClock(startMs));
          const model = new GuavaModel(shape, rate, BigInt(now));
          for (const [step, o] of ops) {
            now += step;
            if (o.kind === 'reserve') {
              assert.equal(limiter.reserveAt(o.permits, now), Number(model.reserve(o.permits, BigInt(now))));
            } else if (o.kind === 'tryReserve') {
              const expected = model.tryReserve(o.permits, javaLong(o.timeout), BigInt(now));
              assert.equal(
                limiter.tryReserveAt(o.permits, o.timeout, now),
                expected === false ? false : Number(expected),
              );
            } else {
              limiter.setRateAt(o.rate, now);
              model.setRate(o.rate, BigInt(now));
              assert.equal(limiter.getRate(), model.rate());
            }
          }
        },
      ),
      { numRuns: runs(500) },
    );
  });

  test('acquire, tryAcquire, sleep and setRate on a manual clock', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('acquire' as const), permits }),
      fc.record({
        kind: fc.constant('tryAcquire' as const),
        permits,
        timeoutMs: fc.integer({ min: -1000, max: 3000 }),
      }),
      fc.record({ kind: fc.constant('sleep' as const), ms: fc.integer({ min: 0, max: 3000 }) }),
      fc.record({ kind: fc.constant('setRate' as const), rate: rates }),
    );
    await fc.assert(
      fc.asyncProperty(shapes, rates, fc.array(op, { maxLength: 40 }), async ({ shape, warmupMs }, rate, ops) => {
        let micros = 0n;
        const clock = new ManualClock(0);
        const advance = (by: bigint): void => {
          micros += by;
          clock.set(Number(micros) / 1000);
        };
        // The ms the limiter asked to sleep. A wait past 2^50 µs (35 years) ends the run: the
        // caller would still be asleep, and the clock could no longer hold whole microseconds.
        const sleptMs: number[] = [];
        let asleepForever = false;
        const sleep = async (ms: number): Promise<void> => {
          sleptMs.push(ms);
          if (ms * 1000 > 2 ** 50) asleepForever = true;
          else advance(BigInt(Math.round(ms * 1000)));
        };
        const limiter = create(shape, warmupMs, rate, clock, sleep);
        const model = new GuavaModel(shape, rate, 0n);
        for (const o of ops) {
          if (asleepForever) break;
          if (o.kind === 'acquire') {
            const wait = model.reserve(o.permits, micros);
            assert.equal(await limiter.acquire(o.permits), Number(wait) / 1e6);
            assert.equal(sleptMs.pop(), Number(wait) / 1000);
          } else if (o.kind === 'tryAcquire') {
            const wait = model.tryReserve(o.permits, BigInt(o.timeoutMs) * 1000n, micros);
            assert.equal(await limiter.tryAcquire(o.permits, o.timeoutMs), wait !== false);
            if (wait !== false) assert.equal(sleptMs.pop(), Number(wait) / 1000);
          } else if (o.kind === 'sleep') {
            advance(BigInt(o.ms) * 1000n);
          } else {
            limiter.setRate(o.rate);
            model.setRate(o.rate, micros);
          }
          assert.equal(sleptMs.length, 0, 'sleep is called once per granted acquire');
        }
      }),
      { numRuns: runs(300) },
    );
  });

  test('a long add that overflows wraps, as in Java (warm-up at 1e-12 permits/s)', () => {
    const shape: Shape = { kind: 'warm', warmupMicros: 86_400_000_000, coldFactor: 3 };
    const limiter = SmoothRateLimiter.warmingUp(1e-12, 86_400_000, { clock: new ManualClock(0) });
    const model = new GuavaModel(shape, 1e-12, 0n);
    assert.equal(limiter.reserveAt(10, 0), Number(model.reserve(10, 0n)));
    assert.ok(model.next < 0n, 'the wrapped cost moved the next-free moment far into the past');
    for (const now of [0, 1, 1_000_000]) {
      assert.equal(limiter.reserveAt(1, now), Number(model.reserve(1, BigInt(now))));
    }
  });
});
