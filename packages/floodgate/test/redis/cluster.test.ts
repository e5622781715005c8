import assert from 'node:assert/strict';
import { createClient, createCluster } from 'redis';
import { describe, test } from 'node:test';
import { FloodgateError, fixedWindow, gcra, tokenBucket } from '../../src/index.js';
import { RedisStore, hashSlotOf, ioredisAdapter, nodeRedisAdapter } from '../../src/stores/redis/index.js';
import { runConformance } from '../conformance/suite.js';
import { beforeStop, useRedisCluster } from './setup.js';

// A six-node Redis Cluster (three masters, one replica each): the tables, and consumeAll within a
// slot (atomic) and across slots (two-phase with refund).
const get = useRedisCluster();

runConformance('redis store on a cluster (ioredis)', (algorithm) =>
  new RedisStore({ adapter: ioredisAdapter(get().client), prefix: 'conf:', unsafeTestTime: true }).bind(algorithm),
);

describe('consumeAll on a cluster', () => {
  const perSecond = gcra({ rate: 10, periodMs: 1000, maxBurst: 2 });
  const perMinute = fixedWindow({ limit: 5, windowMs: 60_000 });

  function store(prefix: string): RedisStore {
    return new RedisStore({ adapter: ioredisAdapter(get().client), prefix, unsafeTestTime: true });
  }

  test('one key under several policies shares a slot, so the call is atomic', async () => {
    const s = store('c1:');
    const slots = [perSecond, perMinute].map((p) => hashSlotOf(s.bind(p).entryOf('user:42').redisKey));
    assert.equal(slots[0], slots[1]);
    await s.bind(perMinute).consume('user:42', 5, 0);
    const refused = await s.consumeAll([{ policy: perSecond, key: 'user:42' }, { policy: perMinute, key: 'user:42' }], 0);
    assert.equal(refused.allowed, false);
    assert.equal((await s.bind(perSecond).peek('user:42', 0, 0)).remaining, 3);
  });

  test('keys in different slots: two-phase, and a refusal gives back what the other slot charged', async () => {
    const s = store('c2:');
    const bucket = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
    const [a, b] = ['ip:1.2.3.4', 'user:7'];
    assert.notEqual(hashSlotOf(s.bind(bucket).entryOf(a).redisKey), hashSlotOf(s.bind(perMinute).entryOf(b).redisKey));
    const both = await s.consumeAll([{ policy: bucket, key: a }, { policy: perMinute, key: b, cost: 4 }], 0);
    assert.equal(both.allowed, true);
    assert.equal((await s.bind(bucket).peek(a, 0, 0)).remaining, 2);
    const refused = await s.consumeAll([{ policy: bucket, key: a, cost: 2 }, { policy: perMinute, key: b, cost: 2 }], 0);
    assert.equal(refused.allowed, false);
    assert.deepEqual(refused.decisions.map((d) => d.allowed), [true, false]);
    assert.equal((await s.bind(bucket).peek(a, 0, 0)).remaining, 2, 'the admitted slot was refunded');
    assert.equal((await s.bind(perMinute).peek(b, 0, 0)).remaining, 1);
  });

  test('node-redis: a cluster client is told apart without being told; { cluster: false } on one is refused', async () => {
    const ports = get().servers.ports.slice(0, 3);
    const cluster = await createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) }).connect();
    beforeStop(() => cluster.close());
    const single = createClient({ url: `redis://127.0.0.1:${ports[0]!}` });
    assert.equal(nodeRedisAdapter(single).cluster, false, 'a single client is not a cluster');
    assert.equal(nodeRedisAdapter(cluster).cluster, true);
    assert.throws(() => nodeRedisAdapter(cluster, { cluster: false }), (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && /lists its masters/.test(e.message));
    assert.throws(() => nodeRedisAdapter({} as never), (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION');

    const untold = new RedisStore({ adapter: nodeRedisAdapter(cluster), prefix: 'c4:', onError: 'throw' });
    const requests = [{ policy: perMinute, key: 'ip:1.2.3.4' }, { policy: perMinute, key: 'user:7' }];
    assert.equal((await untold.consumeAll(requests)).allowed, true);
    // 50 keys in one tick: batched per slot, never CROSSSLOT (each would reject under 'throw').
    const keys = Array.from({ length: 50 }, (_, i) => `k:${i}`);
    const slots = new Set(keys.map((key) => hashSlotOf(untold.bind(perMinute).entryOf(key).redisKey)));
    assert.ok(slots.size > 40, `${slots.size} slots`);
    for (let round = 0; round < 3; round++) {
      const decisions = await Promise.all(keys.map((key) => untold.bind(perMinute).consume(key, 1, Number.NaN)));
      assert.ok(decisions.every((d) => d.reason === 'ok' && d.remaining === 4 - round), `round ${round}`);
    }
  });
});
