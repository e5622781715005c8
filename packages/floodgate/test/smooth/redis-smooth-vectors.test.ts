import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisStore, ioredisAdapter } from '../../src/redis.js';
import { RedisSmoothLimiter } from '../../src/waiting/redis-smooth-limiter.js';
import { useRedis } from '../redis/setup.js';
import { FakeStopwatch } from './fake-stopwatch.js';
import { GUAVA_VECTORS, hasFiniteRates, type GuavaOp } from './guava-vectors.js';

// Guava's own RateLimiterTest, run against the fleet's limiter on a real Redis: the script takes
// the fake stopwatch's time (test mode), and each acquire really waits on the ManualClock in this
// process's line. The tests with an infinite or subnormal rate are left out: the Redis limiter
// takes finite rates only, and its moments are exact up to 2^53 µs (Guava's long saturates later).

const redis = useRedis();

let names = 0;

/** acquire runs one acquire, moving the clock to the limiter's wake-up (if it must wait), and logs the wait as Guava's stopwatch would. */
async function acquire(limiter: RedisSmoothLimiter, permits: number, time: FakeStopwatch): Promise<void> {
  let seconds: number | undefined;
  const pending = limiter.acquire(permits).then((s) => (seconds = s));
  await limiter.getRate(); // answered with the acquire's script: it is granted or in line now
  const wakeAtMs = time.clock.nextTimerAtMs();
  if (seconds === undefined) {
    assert.ok(wakeAtMs !== undefined, 'an acquire not yet granted waits for the alarm');
    time.clock.set(wakeAtMs);
  }
  await pending;
  await time.sleep(seconds! * 1000);
}

async function step(op: GuavaOp, limiter: RedisSmoothLimiter | undefined, time: FakeStopwatch, store: RedisStore) {
  const name = `vector-${names++}`;
  switch (op.op) {
    case 'create':
      limiter = RedisSmoothLimiter.bursty({ store, name, permitsPerSecond: op.rate as number });
      await limiter.getRate(); // created now, as Guava's create
      return limiter;
    case 'createWarmingUp':
      limiter = RedisSmoothLimiter.warmingUp({
        store,
        name,
        permitsPerSecond: op.rate as number,
        warmupMs: op.warmupMs!,
        coldFactor: op.coldFactor!,
      });
      await limiter.getRate();
      return limiter;
    case 'sleepMillis':
      time.sleepMillis(op.ms!);
      return limiter;
    case 'advanceNanos':
      time.advanceNanos(BigInt(op.nanos!));
      return limiter;
  }
  assert.ok(limiter, `${op.op} before create`);
  if (op.op === 'acquire') {
    for (let i = 0; i < (op.repeat ?? 1); i++) await acquire(limiter, op.permits ?? 1, time);
  } else if (op.op === 'tryAcquire') {
    const waitMs = await limiter.tryReserve(op.permits ?? 1, op.timeoutMicros! / 1000);
    assert.equal(waitMs !== false, op.expect, JSON.stringify(op));
    if (waitMs !== false) await time.sleep(waitMs);
  } else if (op.op === 'setRate') {
    await limiter.setRate(op.rate as number);
  } else {
    throw new Error(`unknown op ${op.op}`);
  }
  return limiter;
}

describe("Guava's RateLimiterTest on the Redis smooth limiter", () => {
  const runnable = Object.entries(GUAVA_VECTORS).filter(([, v]) => hasFiniteRates(v));

  test('the finite-rate tests are the ones run', () => {
    assert.equal(runnable.length, 16);
  });

  for (const [name, vector] of runnable) {
    test(name, async () => {
      const time = new FakeStopwatch();
      const store = new RedisStore({
        adapter: ioredisAdapter(redis().client),
        unsafeTestTime: true,
        clock: time.clock,
        timers: time.clock,
        timeoutMs: 5000,
        onError: 'throw',
      });
      let limiter: RedisSmoothLimiter | undefined;
      for (const op of vector.ops) limiter = await step(op, limiter, time, store);
      assert.deepEqual(time.events, vector.events);
      assert.deepEqual(time.eventMicros, vector.eventMicros);
    });
  }
});
