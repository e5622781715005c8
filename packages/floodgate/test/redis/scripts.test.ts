import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fixedWindow, gcra, slidingWindowLog, tokenBucket } from '../../src/index.js';
import {
  BATCH_SCRIPT,
  CONSUME_ALL_SCRIPT,
  DECIDE_SCRIPTS,
  RedisStore,
  ioredisAdapter,
  type RedisAdapter,
} from '../../src/stores/redis/index.js';
import { useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const get = useRedis();
const TEST_TTL_PAD_MS = 3_600_000;

/** counting wraps an adapter and records which of its methods were called. */
function counting(adapter: RedisAdapter): { adapter: RedisAdapter; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    adapter: {
      cluster: adapter.cluster,
      evalsha: (sha1, keys, args) => (calls.push('evalsha'), adapter.evalsha(sha1, keys, args)),
      eval: (script, keys, args) => (calls.push('eval'), adapter.eval(script, keys, args)),
    },
  };
}

describe('scripts', () => {
  // Changing a script changes its SHA1: this table is updated on purpose, never by accident.
  const pinned: Record<string, string> = {
    'token-bucket': 'beba8d1dd3e99366c2fe4cf7a9fc4fa6d1a3bdf6',
    'fixed-window': '0b20ffd64507248b1e0fa2cc97a38d3f8f0ae4df',
    'weighted-window': '765addc6238f3532ee2f64d06d14de7eb51d6663',
    'sub-window-counter': '39f0ddbf17f1d877b83452817f8551eefdad1667',
    'sliding-window-log': 'e2828c385062ca4868e29d18325990f1277f6476',
    gcra: '70747f63f8a1e42784f2fa15bd4421500babbb9c',
    'consume-all': '8581e4e913fd787d1ebdfe756bbc55a5e1c46275',
    batch: '8876edb6875233dbe5181525d2ebe915360de816',
  };

  test('each script has its pinned SHA1, and Redis computes the same', async () => {
    const scripts = [...Object.values(DECIDE_SCRIPTS), CONSUME_ALL_SCRIPT, BATCH_SCRIPT];
    assert.deepEqual(Object.fromEntries(scripts.map((s) => [s.name, s.sha1])), pinned);
    for (const s of scripts) assert.equal(await get().client.script('LOAD', s.source), s.sha1, s.name);
  });

  test('EVALSHA first; on NOSCRIPT the script is sent once by EVAL, then found by SHA1', async () => {
    await get().client.script('FLUSH');
    const { adapter, calls } = counting(ioredisAdapter(get().client));
    const table = new RedisStore({ timeoutMs: DECIDES, adapter, prefix: 'noscript:' }).bind(
      gcra({ rate: 1, periodMs: 1000, maxBurst: 1 }),
    );
    assert.equal((await table.consume('a', 1, 0)).allowed, true);
    assert.deepEqual(calls, ['evalsha', 'eval']);
    assert.equal((await table.consume('a', 1, 0)).remaining, 0);
    assert.deepEqual(calls, ['evalsha', 'eval', 'evalsha']);
  });
});

describe('time and TTL', () => {
  test("without test mode the server TIME is the clock: the caller's nowMs is ignored", async () => {
    const table = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), prefix: 'time:' }).bind(
      fixedWindow({ limit: 2, windowMs: 60_000 }),
    );
    const d = await table.consume('a', 1, 0); // 1970: a window that ended long ago if it were used
    assert.equal(d.allowed, true);
    const [seconds] = await get().client.time();
    const untilEndMs = 60_000 - ((Number(seconds) * 1000) % 60_000);
    assert.ok(
      Math.abs(d.resetMs - untilEndMs) <= 1100,
      `resetMs ${d.resetMs} vs the server's window end in ${untilEndMs}`,
    );
    const ttlMs = await get().client.pttl(table.entryOf('a').redisKey);
    assert.ok(ttlMs > 0 && ttlMs <= d.resetMs, `TTL ${ttlMs} ends at the window's end (${d.resetMs})`);
  });

  test('a key expires when its state comes to rest (server time)', async () => {
    const table = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), prefix: 'rest:' }).bind(
      tokenBucket({ capacity: 2, refillPerSecond: 20 }),
    );
    const redisKey = table.entryOf('a').redisKey;
    await table.consume('a', 1, 0); // back to full in 50 ms
    const ttlMs = await get().client.pttl(redisKey);
    assert.ok(ttlMs > 40 && ttlMs <= 50, `PTTL ${ttlMs}`);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(await get().client.exists(redisKey), 0);
  });

  test('the TTL is the exact rest time (test mode adds an hour, as documented)', async () => {
    const store = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'ttl:',
      unsafeTestTime: true,
    });
    const cases = [
      { policy: tokenBucket({ capacity: 4, refillPerSecond: 2 }), cost: 3, restMs: 1500 },
      { policy: gcra({ rate: 1, periodMs: 300, maxBurst: 4 }), cost: 2, restMs: 600 },
      { policy: slidingWindowLog({ limit: 3, windowMs: 700 }), cost: 1, restMs: 700 },
      { policy: fixedWindow({ limit: 3, windowMs: 1000 }), cost: 1, restMs: 750 },
    ];
    for (const { policy, cost, restMs } of cases) {
      const table = store.bind(policy);
      await table.consume('k', cost, 10_250);
      const ttlMs = (await get().client.pttl(table.entryOf('k').redisKey)) - TEST_TTL_PAD_MS;
      assert.ok(ttlMs <= restMs && ttlMs > restMs - 100, `${policy.name}: TTL ${ttlMs}, rest in ${restMs}`);
    }
  });

  test('a state at rest is not stored: cost 0 on a fresh key, a refund back to full', async () => {
    const table = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'atrest:',
      unsafeTestTime: true,
    }).bind(tokenBucket({ capacity: 3, refillPerSecond: 1 }));
    const redisKey = table.entryOf('k').redisKey;
    await table.consume('k', 0, 1000);
    assert.equal(await get().client.exists(redisKey), 0);
    await table.consume('k', 2, 1000);
    assert.equal(await get().client.exists(redisKey), 1);
    await table.refund('k', 2, 1000);
    assert.equal(await get().client.exists(redisKey), 0);
  });

  test('reserve books the future on Redis as in memory; window policies have none', async () => {
    const store = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'reserve:',
      unsafeTestTime: true,
    });
    const table = store.bind(tokenBucket({ capacity: 2, refillPerSecond: 10 }));
    // x/time/rate's reservations on NewLimiter(10, 2): t0 -> t0, t0 -> t2, t3 -> t4.
    assert.equal(await table.reserve!('r', 2, 0, Infinity), 0);
    assert.equal(await table.reserve!('r', 2, 0, Infinity), 200);
    assert.equal(await table.reserve!('r', 2, 300, Infinity), 100);
    assert.equal(await table.reserve!('r', 2, 300, 50), -1);
    assert.equal(store.bind(fixedWindow({ limit: 1, windowMs: 10 })).reserve, undefined);
  });

  test('the sliding log reads and writes only the cells it needs, for a large limit too', async () => {
    const table = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'biglog:',
      unsafeTestTime: true,
    }).bind(slidingWindowLog({ limit: 50_000, windowMs: 1000 }));
    assert.equal((await table.consume('k', 49_999, 0)).remaining, 1);
    assert.equal((await table.consume('k', 2, 500)).allowed, false);
    assert.deepEqual(await table.consume('k', 1, 999), {
      allowed: true,
      limit: 50_000,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1000,
      reason: 'ok',
    });
    assert.equal((await table.peek('k', 49_999, 1000)).allowed, true);
    assert.equal((await table.peek('k', 50_000, 1000)).allowed, false);
  });
});
