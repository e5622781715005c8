import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisStore, ioredisAdapter } from '../../src/stores/redis/index.js';
import { beforeStop, useRedisCluster } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// checkMemory on a real Redis Cluster: one report per master, named as the client's slot map names
// it, each read from that master, so a single master set to evict is found among safe ones.

const get = useRedisCluster();

test('on a real cluster: a report per master, and the one master that may evict is named', async () => {
  const { client } = get();
  await client.set('warm-up', '1');
  const masters = [
    ...new Set(client.slots.map((nodes) => nodes[0]).filter((node): node is string => node !== undefined)),
  ];
  assert.equal(masters.length, 3);
  const evicting = masters[1]!;
  const direct = new Redis({ host: '127.0.0.1', port: Number(evicting.split(':')[1]) });
  beforeStop(() => direct.disconnect());
  await direct.config('SET', 'maxmemory', '64mb');
  await direct.config('SET', 'maxmemory-policy', 'volatile-lru');

  const reports = await new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(client) }).checkMemory();
  assert.deepEqual(reports.map((r) => r.node).sort(), [...masters].sort());
  for (const report of reports) {
    const risk = report.node === evicting ? 'evicts-limit-state' : 'unbounded';
    assert.equal(report.risk, risk, `${String(report.node)}: ${report.message}`);
  }
  assert.match(
    reports.find((r) => r.node === evicting)!.message,
    new RegExp(`Redis ${evicting} has maxmemory 67108864 bytes under volatile-lru`),
  );
});
