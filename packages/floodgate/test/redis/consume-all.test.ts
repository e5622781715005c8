import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FloodgateError, fixedWindow, gcra, slidingWindowLog, tokenBucket } from '../../src/index.js';
import { CONSUME_ALL_SCRIPT, RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/stores/redis/index.js';
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
    await get().client.script('LOAD', CONSUME_ALL_SCRIPT.source); // so the one call is an EVALSHA that finds it
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
});
