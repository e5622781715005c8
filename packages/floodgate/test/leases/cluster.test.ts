import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { describe, test } from 'node:test';
import { Limiter, fixedWindow, tokenBucket } from '../../src/index.js';
import { LeasedStore, RedisStore, disconnectIoredis, ioredisAdapter } from '../../src/redis.js';
import { beforeStop, useRedisCluster } from '../redis/setup.js';

const get = useRedisCluster();

describe('leases on a real Redis Cluster', () => {
  test('3 nodes, keys on several masters: no unit admitted twice or lost, per key', async () => {
    const { servers } = get();
    const policy = tokenBucket({ capacity: 1000, refillPerSecond: 1e-6 });
    const stores = Array.from({ length: 3 }, () => {
      const client = new Cluster(servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })));
      client.on('error', () => undefined);
      beforeStop(() => disconnectIoredis(client));
      const redis = new RedisStore({ adapter: ioredisAdapter(client), prefix: 'cl:', timeoutMs: 5000 });
      return { redis, store: new LeasedStore({ store: redis, maxOutstandingShare: 0.05 }) };
    });
    const keys = ['alpha', 'bravo', 'charlie', 'delta'];
    const admitted = new Map(keys.map((k) => [k, 0]));
    await Promise.all(
      stores.map(async ({ store }) => {
        const limiter = new Limiter({ policy, store });
        for (let i = 0; i < 400; i++) {
          for (const key of keys) if ((await limiter.consume(key)).allowed) admitted.set(key, admitted.get(key)! + 1);
        }
      }),
    );
    await Promise.all(stores.map(({ store }) => store.close()));
    const direct = stores[0]!.redis.bind(policy);
    for (const key of keys) {
      const left = (await direct.peek(key, 0, Number.NaN)).remaining;
      assert.ok(admitted.get(key)! <= 1000);
      assert.equal(admitted.get(key)! + left, 1000, `${key}: admitted ${admitted.get(key)} + left ${left}`);
    }
  });

  test('a fixed window on the cluster: no window over its limit', async () => {
    const { servers } = get();
    const policy = fixedWindow({ limit: 300, windowMs: 3_600_000 });
    const client = new Cluster(servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })));
    beforeStop(() => disconnectIoredis(client));
    const redis = new RedisStore({ adapter: ioredisAdapter(client), prefix: 'clfw:', timeoutMs: 5000 });
    const stores = [new LeasedStore({ store: redis }), new LeasedStore({ store: redis })];
    let admitted = 0;
    await Promise.all(
      stores.map(async (store) => {
        const limiter = new Limiter({ policy, store });
        for (let i = 0; i < 250; i++) if ((await limiter.consume('w')).allowed) admitted++;
      }),
    );
    await Promise.all(stores.map((store) => store.close()));
    const left = (await redis.bind(policy).peek('w', 0, Number.NaN)).remaining;
    assert.ok(admitted <= 300, `${admitted} admitted of 300`);
    assert.equal(admitted + left, 300, `admitted ${admitted} + left ${left}: what the leases held came back on close`);
  });
});
