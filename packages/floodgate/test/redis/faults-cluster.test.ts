import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Cluster } from 'ioredis';
import { tokenBucket } from '../../src/index.js';
import { RedisStore, disconnectIoredis, ioredisAdapter } from '../../src/stores/redis/index.js';
import { startRedisCluster, type RedisServers } from '../support/redis-server.js';
import { Load, sleep } from './fault-load.js';

// A Redis Cluster loses a master; its replica is promoted (cluster-node-timeout 1 s). Under load,
// every decision settles in time, the policies answer meanwhile, and every key is decided by Redis
// again without restarting anything.
const TIMEOUT_MS = 300;
const KEYS = 30;

let servers: RedisServers;
let client: Cluster;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

before(async () => {
  servers = await startRedisCluster({ nodeTimeoutMs: 1000 });
  const nodes = servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port }));
  client = new Cluster(nodes, {
    slotsRefreshInterval: 250,
    clusterRetryStrategy: () => 100,
    redisOptions: { maxRetriesPerRequest: 1 },
  });
  client.on('error', () => {});
  process.on('unhandledRejection', onUnhandled);
});

after(async () => {
  process.off('unhandledRejection', onUnhandled);
  await disconnectIoredis(client);
  await servers.stop();
});

/**
 * Waits until every key had a decision from Redis among the requests asked after `sinceMs`, in a
 * window of the last 400 ms (settled by now); returns when, or undefined past `deadlineMs`.
 */
async function allKeysHealthy(load: Load, sinceMs: number, deadlineMs: number): Promise<number | undefined> {
  while (performance.now() < deadlineMs) {
    await sleep(200);
    const recent = load.since('open', Math.max(sinceMs, performance.now() - 600), performance.now() - 200);
    const healthy = new Set(recent.filter((s) => s.decision?.reason === 'ok').map((s) => s.key));
    if (healthy.size === KEYS) return performance.now();
  }
  return undefined;
}

test('a master is killed and its replica promoted: decisions settle, then all keys recover', async (t) => {
  const store = new RedisStore({
    adapter: ioredisAdapter(client),
    prefix: 'failover:',
    timeoutMs: TIMEOUT_MS,
    probeIntervalMs: 200,
  });
  const policy = tokenBucket({ capacity: 1e6, refillPerSecond: 1e6 });
  const load = new Load({
    keys: KEYS,
    perTick: 2,
    tables: {
      open: store.withOnError('fail-open').bind(policy),
      local: store.withOnError({ fallback: 'local', share: 0.5 }).bind(policy),
    },
  });
  load.start();
  assert.ok((await allKeysHealthy(load, 0, performance.now() + 3000)) !== undefined, 'healthy before the fault');
  await servers.kill(0);
  const killedMs = performance.now();
  const recoveredMs = await allKeysHealthy(load, killedMs, killedMs + 15_000);
  await load.stop(TIMEOUT_MS + 2000);
  assert.ok(recoveredMs !== undefined, 'every key is decided by Redis again after the failover');
  t.diagnostic(`every key healthy ${Math.round(recoveredMs - killedMs)} ms after the master was killed`);
  const during = load.samples.filter((s) => s.startedMs >= killedMs && s.startedMs < recoveredMs);
  assert.ok(
    load.samples.every((s) => s.decision !== undefined),
    'no decision rejected',
  );
  assert.ok(
    during.some((s) => s.decision!.reason === 'fail-open'),
    'the failover was seen',
  );
  assert.ok(during.filter((s) => s.table === 'open').every((s) => s.decision!.allowed));
  assert.ok(during.filter((s) => s.table === 'local').every((s) => ['ok', 'fallback'].includes(s.decision!.reason)));
  const slowest = Math.max(...load.samples.map((s) => s.latencyMs));
  assert.ok(slowest <= TIMEOUT_MS + 400, `a decision took ${slowest} ms`);
  assert.deepEqual(unhandled, []);
});
