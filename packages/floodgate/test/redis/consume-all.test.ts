import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FloodgateError, fixedWindow, gcra, slidingWindowLog, tokenBucket } from '../../src/index.js';
import { BATCH_SCRIPT, RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/stores/redis/index.js';
import { useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const get = useRedis();

function counted(adapter: RedisAdapter): { adapter: RedisAdapter; calls: () => number } {
  let calls = 0;
  const count =
    <A extends unknown[]>(f: (...a: A) => Promise<unknown>) =>
    (...a: A) => (calls++, f(...a));
  return {
    adapter: { cluster: adapter.cluster, evalsha: count(adapter.evalsha), eval: count(adapter.eval) },
    calls: () => calls,
  };
}

describe('consumeAll on one Redis: all or nothing, one round trip', () => {
  const perSecond = gcra({ rate: 10, periodMs: 1000, maxBurst: 2 }); // 3 at once
  const perMinute = fixedWindow({ limit: 5, windowMs: 60_000 });

  function store(prefix: string): { store: RedisStore; calls: () => number } {
    const { adapter, calls } = counted(ioredisAdapter(get().client));
    return { store: new RedisStore({ timeoutMs: DECIDES, adapter, prefix, unsafeTestTime: true }), calls };
  }

  test('admitted by every limit: all charged, in one script call', async () => {
    const { store: s, calls } = store('all-1:');
    await get().client.script('LOAD', BATCH_SCRIPT.source); // so the one call is an EVALSHA that finds it
    const result = await s.consumeAll(
      [
        { policy: perSecond, key: 'u' },
        { policy: perMinute, key: 'u', cost: 2 },
      ],
      60_000,
    );
    assert.equal(result.allowed, true);
    assert.deepEqual(
      result.decisions.map((d) => d.remaining),
      [2, 3],
    );
    assert.equal(calls(), 1);
    assert.equal((await s.bind(perMinute).peek('u', 0, 60_000)).remaining, 3);
  });

  test('refused by one limit: nothing charged anywhere, and each decision says which', async () => {
    const { store: s } = store('all-2:');
    await s.bind(perMinute).consume('u', 4, 60_000);
    const result = await s.consumeAll(
      [
        { policy: perSecond, key: 'u' },
        { policy: perMinute, key: 'u', cost: 2 },
      ],
      60_000,
    );
    assert.equal(result.allowed, false);
    assert.deepEqual(
      result.decisions.map((d) => [d.allowed, d.reason]),
      [
        [true, 'ok'],
        [false, 'limit'],
      ],
    );
    assert.equal(
      (await s.bind(perSecond).peek('u', 0, 60_000)).remaining,
      3,
      'the limit that admitted was not charged',
    );
    assert.equal((await s.bind(perMinute).peek('u', 0, 60_000)).remaining, 1);
  });

  test('a key named twice sees its earlier charge', async () => {
    const { store: s } = store('all-3:');
    const log = slidingWindowLog({ limit: 3, windowMs: 1000 });
    const twice = await s.consumeAll(
      [
        { policy: log, key: 'u', cost: 2 },
        { policy: log, key: 'u', cost: 2 },
      ],
      0,
    );
    assert.equal(twice.allowed, false);
    assert.equal((await s.bind(log).peek('u', 0, 0)).remaining, 3);
    const fits = await s.consumeAll(
      [
        { policy: log, key: 'u', cost: 2 },
        { policy: log, key: 'u', cost: 1 },
      ],
      0,
    );
    assert.equal(fits.allowed, true);
    assert.deepEqual(
      fits.decisions.map((d) => d.remaining),
      [1, 0],
    );
  });

  test('different keys on one server are still one atomic script', async () => {
    const { store: s, calls } = store('all-4:');
    const bucket = tokenBucket({ capacity: 2, refillPerSecond: 1 });
    const result = await s.consumeAll(
      [
        { policy: bucket, key: 'ip:1' },
        { policy: perMinute, key: 'user:7' },
      ],
      0,
    );
    assert.equal(result.allowed, true);
    assert.equal(calls(), 1);
  });

  test('an empty list admits; a bad request rejects before anything is sent', async () => {
    const { store: s, calls } = store('all-5:');
    assert.deepEqual(await s.consumeAll([], 0), { allowed: true, decisions: [] });
    await assert.rejects(
      s.consumeAll([{ policy: perSecond, key: 'u', cost: 4 }], 0),
      (e: unknown) => e instanceof FloodgateError && e.code === 'COST_EXCEEDS_LIMIT',
    );
    assert.equal(calls(), 0);
  });

  test('without test mode the server TIME decides for every limit', async () => {
    const s = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), prefix: 'all-6:' });
    const result = await s.consumeAll([
      { policy: perSecond, key: 'u' },
      { policy: perMinute, key: 'u' },
    ]);
    assert.equal(result.allowed, true);
    assert.ok(result.decisions[1]!.resetMs <= 60_000 && result.decisions[1]!.resetMs > 0);
  });

  test('the calls of one tick share one batch script: groups and lone decisions, each group all or nothing', async () => {
    const { store: s, calls } = store('all-7:');
    await get().client.script('LOAD', BATCH_SCRIPT.source);
    const bucket = tokenBucket({ capacity: 2, refillPerSecond: 0.001 });
    await s.bind(perMinute).consume('spent', 5, 0);
    const before = calls();
    const [a, b, refused, lone] = await Promise.all([
      s.consumeAll(
        [
          { policy: bucket, key: 'ip:1' },
          { policy: perMinute, key: 'user:1' },
        ],
        0,
      ),
      s.consumeAll(
        [
          { policy: bucket, key: 'ip:1' },
          { policy: perMinute, key: 'user:2', cost: 2 },
        ],
        0,
      ),
      s.consumeAll(
        [
          { policy: bucket, key: 'ip:2' },
          { policy: perMinute, key: 'spent' },
        ],
        0,
      ),
      s.bind(bucket).consume('ip:3', 1, 0),
    ]);
    assert.equal(calls() - before, 1, 'one script for the tick');
    assert.equal(a.allowed, true);
    assert.deepEqual(
      b.decisions.map((d) => d.remaining),
      [0, 3],
      'the second group sees the first one charge ip:1',
    );
    assert.equal(refused.allowed, false);
    assert.deepEqual(
      refused.decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.equal(lone.allowed, true);
    assert.equal((await s.bind(bucket).peek('ip:2', 0, 0)).remaining, 2, 'the refused group charged nothing');
    assert.equal((await s.bind(perMinute).peek('user:2', 0, 0)).remaining, 3);
  });

  test('a batch of more decisions than maxBatchSize is split between units, never inside a group', async () => {
    const { adapter } = counted(ioredisAdapter(get().client));
    const sizes: number[] = [];
    const seen: RedisAdapter = {
      ...adapter,
      evalsha: (sha1, keys, args) => (sizes.push(keys.length), adapter.evalsha(sha1, keys, args)),
    };
    const s = new RedisStore({
      timeoutMs: DECIDES,
      adapter: seen,
      prefix: 'all-8:',
      unsafeTestTime: true,
      maxBatchSize: 4,
    });
    await get().client.script('LOAD', BATCH_SCRIPT.source);
    const groups = Array.from({ length: 5 }, (_, i) =>
      s.consumeAll(
        [
          { policy: perSecond, key: `u${i}` },
          { policy: perMinute, key: `u${i}` },
          { policy: perMinute, key: `v${i}` },
        ],
        0,
      ),
    );
    const results = await Promise.all(groups);
    assert.ok(results.every((r) => r.allowed));
    assert.deepEqual(sizes, [3, 3, 3, 3, 3], 'each script holds whole groups only (3 + 3 > 4)');
  });

  test('a group whose member fails in the script fails as a whole; the rest of the batch is decided', async () => {
    const { store: s, calls } = store('all-9:');
    await get().client.script('LOAD', BATCH_SCRIPT.source);
    const bucket = tokenBucket({ capacity: 2, refillPerSecond: 0.001 });
    await get().client.set(s.bind(bucket).entryOf('broken').redisKey, 'not doubles');
    const before = calls();
    const [broken, fine] = await Promise.allSettled([
      s.consumeAll(
        [
          { policy: perMinute, key: 'user:9' },
          { policy: bucket, key: 'broken' },
        ],
        0,
      ),
      s.consumeAll(
        [
          { policy: bucket, key: 'ip:8' },
          { policy: perMinute, key: 'user:8' },
        ],
        0,
      ),
    ]);
    assert.equal(calls() - before, 1);
    assert.equal(broken.status, 'rejected');
    assert.match(String((broken as PromiseRejectedResult).reason), /holds 11 bytes/);
    assert.equal(fine.status === 'fulfilled' && fine.value.allowed, true);
    assert.equal((await s.bind(perMinute).peek('user:9', 0, 0)).remaining, 5, 'the failed group charged nothing');
    assert.equal((await s.bind(perMinute).peek('user:8', 0, 0)).remaining, 4);
  });
});
