import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSlotOf, ioredisAdapter } from 'floodgate/redis';
import { useRedisCluster } from '../../../floodgate/test/redis/setup.js';
import { bucketKeysOf } from '../../src/ratelimit/quota/redis-calls.js';
import { BUCKETS, redisLedgerChecks, twoServiceReplicas, type LedgerRedis } from './rlqs-redis-checks.js';

describe('RLQS on a real Redis Cluster', () => {
  const cluster = useRedisCluster();
  const onCluster = (): LedgerRedis => {
    const { client, servers } = cluster();
    return {
      adapter: ioredisAdapter(client),
      keys: async (pattern) => (await Promise.all(client.nodes('master').map((n) => n.keys(pattern)))).flat(),
      hget: (key, field) => client.hget(key, field),
      flushall: () => Promise.all(client.nodes('master').map((n) => n.flushall())),
      flags: [
        '--redis-cluster',
        servers.ports
          .slice(0, 3)
          .map((port) => `127.0.0.1:${port}`)
          .join(','),
      ],
    };
  };

  it('has the checks’ buckets in slots of different masters, so their calls cross nodes', async () => {
    const { client } = cluster();
    await client.ping(); // connected: the slot map is known
    const adapter = ioredisAdapter(client);
    const slots = BUCKETS.map((b) => hashSlotOf(bucketKeysOf('t:rlqs:', b)[0]));
    assert.equal(new Set(slots).size, BUCKETS.length, `slots ${slots.join(', ')}`);
    const masters = new Set(slots.map((s) => adapter.nodeOf!(s)));
    assert.ok(masters.size >= 2 && !masters.has(undefined), `masters ${[...masters].join(', ')}`);
  });

  redisLedgerChecks(onCluster);
  twoServiceReplicas(onCluster);
});
