import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  FloodgateError,
  Limiter,
  fixedWindow,
  gcra,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';
import {
  RedisStore,
  ioredisAdapter,
  nodeRedisAdapter,
  type OnError,
  type RedisAdapter,
} from '../../src/stores/redis/index.js';
import { hashSlotOf } from '../../src/stores/redis/key-layout.js';
import { reportOf, routingKeys } from '../../src/stores/redis/memory-check.js';
import { createClient } from 'redis';
import { beforeStop, useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const get = useRedis();
const EVICTING = [
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-ttl',
  'volatile-random',
];
const POLICIES: Record<string, Algorithm> = {
  'token bucket': tokenBucket({ capacity: 3, refillPerSecond: 0.001 }),
  gcra: gcra({ rate: 3, periodMs: 3_600_000, maxBurst: 2 }),
  'fixed window': fixedWindow({ limit: 3, windowMs: 3_600_000 }),
  'sliding window counter': slidingWindowCounter({ limit: 3, windowMs: 3_600_000 }),
  'sliding window log': slidingWindowLog({ limit: 3, windowMs: 3_600_000 }),
};

function storeOf(onError: OnError): RedisStore {
  // The over-limit cache would answer a throttled key locally until its retry time: off, so every decision is Redis's.
  return new RedisStore({
    timeoutMs: DECIDES,
    adapter: ioredisAdapter(get().client),
    onError,
    overLimitCacheMaxKeys: 0,
  });
}

function pick(decision: { allowed: boolean; reason: string }): [boolean, string] {
  return [decision.allowed, decision.reason];
}

async function usedMemoryBytes(client: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
}

/** throttle spends `policy`'s whole limit for `key` and checks the next request is refused. */
async function throttle(limiter: Limiter, key: string): Promise<void> {
  for (let i = 0; i < 3; i++) assert.equal((await limiter.consume(key)).allowed, true);
  assert.equal((await limiter.consume(key)).allowed, false);
}

/** fill writes 1 KB values until `stop()` says so or Redis refuses with OOM; returns how many it wrote. */
async function fill(client: Redis, options: { withTtl: boolean; stop: () => Promise<boolean> }): Promise<number> {
  const value = 'x'.repeat(1024);
  for (let batch = 0; batch < 400; batch++) {
    const pipeline = client.pipeline();
    for (let i = 0; i < 50; i++) {
      if (options.withTtl) pipeline.set(`filler:${batch}:${i}`, value, 'PX', 86_400_000);
      else pipeline.set(`filler:${batch}:${i}`, value);
    }
    const results = (await pipeline.exec()) ?? [];
    if (results.some(([error]) => error !== null && /^OOM/.test(error.message)))
      return batch * 50 + (await topUp(client));
    if (await options.stop()) return (batch + 1) * 50;
  }
  throw new Error('fill: Redis neither evicted the watched key nor refused a write after 20,000 values');
}

/**
 * topUp writes small values one at a time until Redis refuses one with OOM: a pipeline's own query
 * buffer counts as used memory while it is read, so the first refusal may leave room for small writes.
 */
async function topUp(client: Redis): Promise<number> {
  for (let i = 0; i < 10_000; i++) {
    try {
      await client.set(`top-up:${i}`, 'x'.repeat(64));
    } catch (error) {
      if (error instanceof Error && /^OOM/.test(error.message)) return i;
      throw error;
    }
  }
  throw new Error('topUp: Redis did not refuse a write after 10,000 small values');
}

afterEach(async () => {
  const client = get().client;
  await client.config('SET', 'maxmemory', '0');
  await client.config('SET', 'maxmemory-policy', 'noeviction');
  await client.flushall();
});

describe('checkMemory reports what a memory bound means for throttled keys', () => {
  test('no maxmemory: unbounded', async () => {
    const [report] = await storeOf('throw').checkMemory();
    assert.equal(report?.risk, 'unbounded');
    assert.equal(report?.maxmemoryBytes, 0);
    assert.equal(report?.node, undefined);
  });

  test('noeviction with a bound: refuses writes, resets nothing', async () => {
    await get().client.config('SET', 'maxmemory', '100mb');
    const [report] = await storeOf('throw').checkMemory();
    assert.equal(report?.risk, 'refuses-writes');
    assert.equal(report?.policy, 'noeviction');
    assert.equal(report?.maxmemoryBytes, 100 * 1024 * 1024);
  });

  for (const policy of EVICTING) {
    test(`${policy} with a bound: may evict limit state`, async () => {
      await get().client.config('SET', 'maxmemory', '100mb');
      await get().client.config('SET', 'maxmemory-policy', policy);
      const [report] = await storeOf('throw').checkMemory();
      assert.equal(report?.risk, 'evicts-limit-state');
      assert.equal(report?.policy, policy);
      assert.match(report!.message, new RegExp(`${policy}.*noeviction`));
    });
  }

  test('through node-redis too: the same report', async () => {
    await get().client.config('SET', 'maxmemory', '10mb');
    await get().client.config('SET', 'maxmemory-policy', 'allkeys-lfu');
    const client = await createClient({ url: `redis://127.0.0.1:${get().servers.ports[0]}` }).connect();
    try {
      const [report] = await new RedisStore({ timeoutMs: DECIDES, adapter: nodeRedisAdapter(client) }).checkMemory();
      assert.deepEqual(
        [report?.risk, report?.policy, report?.maxmemoryBytes],
        ['evicts-limit-state', 'allkeys-lfu', 10 * 1024 * 1024],
      );
    } finally {
      client.destroy();
    }
  });

  test('replies that are not INFO texts: unknown, saying so; Buffers read as text', () => {
    for (const reply of [null, 'OK', [], [42], ['# Memory\r\nused_memory:1\r\n']]) {
      const report = reportOf(undefined, reply);
      assert.equal(report.risk, 'unknown');
      assert.match(report.message, /no maxmemory or maxmemory_policy field/);
    }
    const info = Buffer.from('# Memory\r\nmaxmemory:1024\r\nmaxmemory_policy:volatile-ttl\r\n');
    const report = reportOf('a:1', [info, Buffer.from('evicted_keys:7\r\n')]);
    assert.deepEqual(
      [report.risk, report.maxmemoryBytes, report.policy, report.evictedKeys],
      ['evicts-limit-state', 1024, 'volatile-ttl', 7],
    );
    assert.match(report.message, /Redis a:1 .*evicted 7 keys/);
  });

  test('INFO refused by an ACL: unknown, naming the refusal, never a rejection', async () => {
    const client = get().client;
    await client.call('ACL', 'SETUSER', 'noinfo', 'on', '>secret', '~*', '+@all', '-info');
    const limited = new Redis({
      port: get().servers.ports[0]!,
      host: '127.0.0.1',
      username: 'noinfo',
      password: 'secret',
    });
    beforeStop(() => limited.disconnect());
    const [report] = await new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(limited) }).checkMemory();
    assert.equal(report?.risk, 'unknown');
    assert.match(report!.message, /can't run this command|NOPERM/);
    limited.disconnect();
  });

  test('a closed port: unknown, within the timeout', async () => {
    const closed = new Redis({
      port: 1,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    const [report] = await new RedisStore({ adapter: ioredisAdapter(closed), timeoutMs: 500 }).checkMemory();
    closed.disconnect();
    assert.equal(report?.risk, 'unknown');
    assert.equal(report?.policy, undefined);
  });

  test('on a cluster, one check per master, each routed to a slot that master serves', async () => {
    const nodeOf = (slot: number): string => `node-${Math.floor(slot / 5462)}`;
    const adapter: RedisAdapter = { cluster: true, nodeOf, evalsha: async () => [], eval: async () => [] };
    const keys = routingKeys(adapter, 'floodgate:');
    assert.deepEqual([...keys.keys()].sort(), ['node-0', 'node-1', 'node-2']);
    for (const [node, key] of keys) assert.equal(nodeOf(hashSlotOf(key)), node);
    const reports = await new RedisStore({ timeoutMs: DECIDES, adapter }).checkMemory();
    assert.deepEqual(reports.map((r) => [r.node, r.risk]).sort(), [
      ['node-0', 'unknown'],
      ['node-1', 'unknown'],
      ['node-2', 'unknown'],
    ]);
  });
});

describe('a throttled key when Redis fills up', () => {
  for (const policy of ['allkeys-lru', 'volatile-ttl']) {
    test(`${policy}: the throttled key is evicted and its limit starts over (the hazard checkMemory reports)`, async () => {
      const client = get().client;
      await client.config('SET', 'maxmemory-policy', policy);
      const store = storeOf('throw');
      const limiter = new Limiter({ policy: POLICIES['fixed window']!, store });
      await throttle(limiter, 'victim');
      const [victimKey] = await client.keys('floodgate:*{victim}');
      await client.config('SET', 'maxmemory', String((await usedMemoryBytes(client)) + 256 * 1024));
      assert.equal((await store.checkMemory())[0]?.risk, 'evicts-limit-state');
      await fill(client, {
        withTtl: policy.startsWith('volatile'),
        stop: async () => (await client.exists(victimKey!)) === 0,
      });
      assert.equal(await client.exists(victimKey!), 0, 'the throttled key was evicted');
      assert.equal((await limiter.consume('victim')).allowed, true, 'its limit was reset by the eviction');
      assert.ok((await store.checkMemory())[0]!.evictedKeys! > 0);
    });
  }

  for (const [name, algorithm] of Object.entries(POLICIES)) {
    test(`noeviction, full, ${name}: the throttled key stays refused; a new key is fail-closed or a typed OOM error`, async () => {
      const client = get().client;
      await client.config('SET', 'maxmemory-policy', 'noeviction');
      const closed = new Limiter({ policy: algorithm, store: storeOf('fail-closed') });
      const throwing = new Limiter({ policy: algorithm, store: storeOf('throw') });
      await throttle(closed, 'victim');
      await client.config('SET', 'maxmemory', String((await usedMemoryBytes(client)) + 256 * 1024));
      assert.ok((await fill(client, { withTtl: false, stop: async () => false })) > 0);
      for (let i = 0; i < 5; i++) assert.equal((await closed.consume('victim')).allowed, false);
      // A refusal writes nothing, so Redis still runs its script: the key is refused by its own limit, exactly.
      assert.deepEqual(pick(await throwing.consume('victim')), [false, 'limit']);
      // Redis may have freed a little since the fill (client buffers shrink, keys of earlier tests
      // expire): fill it to the last byte again, so the newcomer's write meets a full Redis.
      await topUp(client);
      const newcomer = await closed.consume('newcomer');
      assert.deepEqual(pick(newcomer), [false, 'fail-closed']);
      await topUp(client); // and again: the refused write may have let Redis free a few bytes meanwhile
      await assert.rejects(
        throwing.consume('newcomer'),
        (e: unknown) =>
          e instanceof FloodgateError &&
          e.code === 'STORE_ERROR' &&
          /OOM/.test(e.message) &&
          /maxmemory/.test(e.message) &&
          /onError/.test(e.message),
      );
    });
  }
});

describe('noeviction, full, decisions batched in one tick (one script, each decision on its own)', () => {
  const expected: Record<'fail-open' | 'fail-closed' | 'throw', Array<[boolean, string] | RegExp>> = {
    // fail-open admits what Redis could not write: a newcomer passes unlimited while Redis is full.
    'fail-open': [
      [false, 'limit'],
      [true, 'fail-open'],
      [false, 'limit'],
    ],
    'fail-closed': [
      [false, 'limit'],
      [false, 'fail-closed'],
      [false, 'limit'],
    ],
    throw: [[false, 'limit'], /batch script failed .*OOM.*maxmemory.*onError/, [false, 'limit']],
  };
  for (const [onError, outcomes] of Object.entries(expected)) {
    test(`${onError}: the throttled key is refused by its limit, the newcomer as onError says`, async () => {
      const client = get().client;
      const limiter = new Limiter({ policy: POLICIES['fixed window']!, store: storeOf(onError as OnError) });
      await throttle(limiter, 'victim');
      await client.config('SET', 'maxmemory', String((await usedMemoryBytes(client)) + 256 * 1024));
      await fill(client, { withTtl: false, stop: async () => false });
      const settled = await Promise.allSettled([
        limiter.consume('victim'),
        limiter.consume('newcomer'),
        limiter.consume('victim'),
      ]);
      settled.forEach((outcome, i) => {
        const want = outcomes[i]!;
        if (want instanceof RegExp) {
          assert.ok(
            outcome.status === 'rejected' &&
              outcome.reason instanceof FloodgateError &&
              outcome.reason.code === 'STORE_ERROR',
          );
          assert.match(outcome.reason.message, want);
        } else {
          assert.ok(outcome.status === 'fulfilled');
          assert.deepEqual(pick(outcome.value), want);
        }
      });
    });
  }
});

test('noeviction, full, consumeAll: a throttled key refuses the whole request, writing nothing; an all-admitted one is a typed OOM error', async () => {
  const client = get().client;
  const store = storeOf('fail-closed');
  const policy = POLICIES['sliding window counter']!;
  await throttle(new Limiter({ policy, store }), 'victim');
  await client.config('SET', 'maxmemory', String((await usedMemoryBytes(client)) + 256 * 1024));
  await fill(client, { withTtl: false, stop: async () => false });
  const refused = await store.consumeAll([
    { policy, key: 'newcomer' },
    { policy, key: 'victim' },
  ]);
  assert.deepEqual([refused.allowed, refused.decisions.map((d) => d.reason)], [false, ['ok', 'limit']]);
  await assert.rejects(
    store.consumeAll([{ policy, key: 'newcomer' }]),
    (e: unknown) =>
      e instanceof FloodgateError &&
      e.code === 'STORE_ERROR' &&
      /the batch script failed for .*newcomer.*: OOM.*maxmemory/.test(e.message),
  );
});

describe('per-key memory of each policy (MEMORY USAGE), for sizing maxmemory', () => {
  test('every single-value state stays under 160 bytes; the log grows with its limit', async () => {
    const client = get().client;
    const store = storeOf('throw');
    for (const [name, algorithm] of Object.entries(POLICIES)) {
      await throttle(new Limiter({ policy: algorithm, store }), `u:${name}`);
      const [key] = await client.keys(`floodgate:${algorithm.name}:*`);
      const bytes = Number(await client.call('MEMORY', 'USAGE', key!, 'SAMPLES', '0'));
      assert.ok(bytes > 0 && bytes <= (name === 'sliding window log' ? 400 : 160), `${name}: ${bytes} bytes`);
    }
  });
});
