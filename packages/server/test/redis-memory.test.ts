import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway } from './support/gateway-process.js';

function config(redisPort: number): string {
  return `
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", timeoutMs: 500 }
routes:
  - name: r
    upstream: http://127.0.0.1:9
    rules:
      - name: per-client
        policy: { algorithm: fixedWindow, limit: 10, windowMs: 60000 }
        key: { type: ip }
`;
}

describe('floodgate serve checks the memory settings of its Redis', () => {
  let redis: RedisServers;
  let client: Redis;
  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true });
    await client.connect();
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  it('warns, once ready, when a full Redis could evict a throttled key', async () => {
    await client.config('SET', 'maxmemory', '64mb');
    await client.config('SET', 'maxmemory-policy', 'volatile-ttl');
    const gateway = await startGateway(config(redis.ports[0]!));
    try {
      const line = await gateway.waitForLog('store memory: a throttled key could be evicted');
      assert.match(String((line as { risk?: unknown }).risk), /volatile-ttl/);
    } finally {
      await gateway.stop();
    }
  });

  it('says nothing under noeviction', async () => {
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    const gateway = await startGateway(config(redis.ports[0]!));
    try {
      const checked = await gateway.waitForLog('store memory checked');
      assert.equal((checked as { risks?: unknown }).risks, 0);
      assert.equal(
        gateway.logs.some((l) => l.msg === 'store memory: a throttled key could be evicted'),
        false,
      );
    } finally {
      await gateway.stop();
    }
  });
});
