import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { SmoothRateLimiter } from '../../src/core/smooth/smooth-rate-limiter.js';
import { RedisStore, hashSlotOf, ioredisAdapter } from '../../src/redis.js';
import { RedisSmoothLimiter } from '../../src/waiting/redis-smooth-limiter.js';
import { useRedisCluster } from '../redis/setup.js';

// The fleet's smooth limiter on a six-node Redis Cluster: each limiter is one key (its name the
// hash tag), so every script runs on the master serving that slot.

const cluster = useRedisCluster();

describe('RedisSmoothLimiter on a Redis Cluster', () => {
  test('limiters on different masters each keep Guava’s schedule', async () => {
    const clock = new ManualClock(5_000);
    const store = new RedisStore({
      adapter: ioredisAdapter(cluster().client),
      unsafeTestTime: true,
      clock,
      timers: clock,
      timeoutMs: 5000,
      onError: 'throw',
    });
    const names = ['partner-a', 'partner-b', 'partner-c'];
    assert.ok(new Set(names.map((n) => Math.floor(hashSlotOf(`{${n}}`) / 5462))).size > 1, 'names on several masters');
    for (const name of names) {
      const fleet = RedisSmoothLimiter.warmingUp({ store, name, permitsPerSecond: 10, warmupMs: 1000 });
      const local = SmoothRateLimiter.warmingUp(10, 1000, { clock });
      const waits: number[] = [];
      const expected: number[] = [];
      for (const permits of [1, 1, 3, 1, 2, 1]) {
        waits.push(await fleet.reserve(permits));
        expected.push(local.reserveAt(permits, clock.now() * 1000) / 1000);
      }
      assert.deepEqual(waits, expected, name);
    }
  });
});
