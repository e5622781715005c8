import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { RedisStore, disconnectIoredis, ioredisAdapter } from '../../src/stores/redis/index.js';
import { startRedisCluster, startRedisServer, type RedisServers } from '../support/redis-server.js';
import { ALL_OR_NOTHING_LIMIT, EXACT_LIMIT, allOrNothing, exactPolicies } from './worker-policies.js';
import { Cluster, Redis } from 'ioredis';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// Exactness across processes: four worker processes, each with its own client, hammer the same
// keys at once in real time; the total admitted is exactly what each policy allows.
const run = promisify(execFile);
const WORKERS = 4;
const REQUESTS = 80; // per worker and policy: 320 tries against limits of 120 and 90

async function hammer(servers: RedisServers, cluster: boolean, prefix: string): Promise<Record<string, number>> {
  const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));
  const args = JSON.stringify({
    ports: cluster ? servers.ports.slice(0, 3) : servers.ports,
    cluster,
    prefix,
    requests: REQUESTS,
  });
  const outputs = await Promise.all(
    Array.from({ length: WORKERS }, () =>
      run(process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', worker, args], { timeout: 30_000 }),
    ),
  );
  const totals: Record<string, number> = {};
  for (const { stdout } of outputs) {
    for (const [name, admitted] of Object.entries(JSON.parse(stdout) as Record<string, number>))
      totals[name] = (totals[name] ?? 0) + admitted;
  }
  return totals;
}

async function check(servers: RedisServers, cluster: boolean): Promise<void> {
  const prefix = `procs-${Date.now()}:`;
  const totals = await hammer(servers, cluster, prefix);
  const expected = Object.fromEntries(Object.keys(exactPolicies).map((name) => [name, EXACT_LIMIT]));
  assert.deepEqual(totals, { ...expected, allOrNothing: ALL_OR_NOTHING_LIMIT });
  // Nothing was spent on the refused all-or-nothing tries: the bucket holds 150 - 90 (and no refill to speak of).
  const client = cluster
    ? new Cluster(servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })))
    : new Redis({ host: '127.0.0.1', port: servers.ports[0]! });
  try {
    const store = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(client), prefix });
    assert.equal((await store.bind(allOrNothing[0]!).peek('shared-all', 0, 0)).remaining, 60);
  } finally {
    await disconnectIoredis(client);
  }
}

describe('several processes, one limit', () => {
  test('one Redis: each policy admits exactly its limit', async () => {
    const servers = await startRedisServer();
    try {
      await check(servers, false);
    } finally {
      await servers.stop();
    }
  });

  test('a Redis Cluster: each policy admits exactly its limit', async () => {
    const servers = await startRedisCluster();
    try {
      await check(servers, true);
    } finally {
      await servers.stop();
    }
  });
});
