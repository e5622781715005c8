import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { RedisSemaphore, ioredisAdapter } from '../../src/redis.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';

// Several processes, one semaphore: each worker process has its own client and its own local line.
const run = promisify(execFile);
const WORKER = fileURLToPath(new URL('./semaphore-worker.ts', import.meta.url));

interface HoldResult {
  readonly maxHolding: number;
  readonly holds: number;
}

function worker(args: Record<string, unknown>): Promise<string> {
  return run(process.execPath, ['--conditions=floodgate-source', '--import', 'tsx', WORKER, JSON.stringify(args)], {
    timeout: 30_000,
  }).then((r) => r.stdout);
}

describe('RedisSemaphore across processes', () => {
  let servers: RedisServers;
  let client: Redis;
  before(async () => {
    servers = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: servers.ports[0]! });
  });
  after(async () => {
    client.disconnect();
    await servers.stop();
  });

  test('four processes holding and releasing at once never exceed the permits, and reach them', async () => {
    const PERMITS = 3;
    const WORKERS = 4;
    const base = {
      mode: 'hold',
      port: servers.ports[0]!,
      name: 'procs',
      permits: PERMITS,
      leaseMs: 10_000,
      lanes: 3,
      cycles: 6,
      holdMs: 25,
      counterKey: 'procs:holding',
    };
    const outputs = await Promise.all(Array.from({ length: WORKERS }, () => worker(base)));
    const results = outputs.map((out) => JSON.parse(out) as HoldResult);
    assert.equal(Math.max(...results.map((r) => r.maxHolding)), PERMITS);
    assert.equal(
      results.reduce((sum, r) => sum + r.holds, 0),
      WORKERS * 3 * 6,
    );
    const semaphore = new RedisSemaphore({
      adapter: ioredisAdapter(client),
      name: 'procs',
      permits: PERMITS,
      leaseMs: 10_000,
    });
    assert.equal(await semaphore.holders(), 0);
    assert.equal(await client.exists('floodgate:semaphore:{procs}'), 0, 'the last release leaves no key behind');
  });

  test('permits of a process that died without releasing are reclaimed after leaseMs', async () => {
    const leaseMs = 600;
    const args = {
      mode: 'die',
      port: servers.ports[0]!,
      name: 'dies',
      permits: 2,
      leaseMs,
      lanes: 0,
      cycles: 0,
      holdMs: 0,
      counterKey: '',
    };
    assert.deepEqual(JSON.parse(await worker(args)), { held: 2 });
    const semaphore = new RedisSemaphore({ adapter: ioredisAdapter(client), name: 'dies', permits: 2, leaseMs });
    assert.equal(await semaphore.holders(), 2);
    const pttlMs = await client.pttl('floodgate:semaphore:{dies}');
    assert.ok(pttlMs > 0 && pttlMs <= leaseMs, `the key lives as long as its latest lease: PTTL ${pttlMs}`);
    const permits = await Promise.all([semaphore.acquire({ maxWaitMs: 5000 }), semaphore.acquire({ maxWaitMs: 5000 })]);
    assert.equal(await semaphore.holders(), 2);
    await Promise.all(permits.map((p) => p.release()));
    assert.equal(await semaphore.available(), 2);
  });
});
