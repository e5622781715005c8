import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRedisCluster, type RedisServers } from '../support/redis-server.js';
import { promoted, replicaOf } from './faults.js';
import { decidedByRedisSince, nowMs, startWorkers, type Worker } from './workers.js';

// Issue 20, on a Redis Cluster (cluster-node-timeout 1 s): two processes, each a RedisStore and an
// ioredis Cluster client at their defaults under a steady load, while a master is killed and its
// replica promoted. No caller sees an error, every decision settles, every key (those of the lost
// master's slots too) is decided by Redis again, and no process crashes. Behaviour only.
let servers: RedisServers;
let workers: Worker[];

before(async () => {
  servers = await startRedisCluster({ nodeTimeoutMs: 1000 });
  workers = await startWorkers(2, { ports: servers.ports.slice(0, 3), cluster: true });
});
after(async () => {
  for (const w of workers ?? []) void w.stop();
  await servers?.stop();
});

test('a master is killed and its replica promoted: no errors, every key decided by Redis again, no crash', async () => {
  const replica = await replicaOf(servers.ports[0]!);
  await decidedByRedisSince(workers, nowMs());
  await servers.kill(0);
  assert.ok((await promoted(replica, 20_000)) !== undefined, 'the replica was promoted');
  await decidedByRedisSince(workers, nowMs());
  const ends = await Promise.all(workers.map((w) => w.stop()));
  for (const end of ends) {
    assert.deepEqual({ code: end.code, signal: end.signal }, { code: 0, signal: null }, end.stderr);
    assert.equal(end.last.unsettled, undefined, 'every decision settled');
    assert.equal(end.last.errors, 0, `no errors reached a caller: ${end.last.error}`);
    assert.equal(end.last.unhandled, 0, 'no unhandled rejections');
  }
});
