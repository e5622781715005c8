import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';
import { slowDown } from './faults.js';
import { decidedByRedisSince, nowMs, startWorkers, type Worker } from './workers.js';

// Issue 20, on one Redis: three processes, each a RedisStore and an ioredis client at their
// defaults under a steady load, while Redis hangs, is killed and restarted, and turns slow. The
// default policy answers every caller meanwhile (no errors), every decision settles, each process
// is decided by Redis again once Redis is back, and no process crashes. Behaviour only: how fast
// is bench/chaos.ts's business.
const FAULT_MS = 1200;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('chaos on one Redis, three processes at the defaults', () => {
  let servers: RedisServers;
  let workers: Worker[];

  before(async () => {
    servers = await startRedisServer();
    workers = await startWorkers(3, { ports: servers.ports, cluster: false });
  });
  after(async () => {
    for (const w of workers ?? []) void w.stop();
    await servers?.stop();
  });

  /** Errors every worker has reported so far. */
  const errors = (): number => workers.reduce((n, w) => n + (w.status?.errors ?? 0), 0);

  test('hung (SIGSTOP), then resumed: no caller sees an error, and Redis decides again', async () => {
    servers.signal(0, 'SIGSTOP');
    await sleep(FAULT_MS);
    servers.signal(0, 'SIGCONT');
    await decidedByRedisSince(workers, nowMs());
    assert.equal(errors(), 0);
  });

  test('killed, then restarted on its port: no caller sees an error, and Redis decides again', async () => {
    await servers.kill(0);
    await sleep(FAULT_MS);
    await servers.restart(0);
    await decidedByRedisSince(workers, nowMs());
    assert.equal(errors(), 0);
  });

  test('slow (busy scripts of 20 ms back to back): no caller sees an error, and Redis decides again', async () => {
    const scripts = await slowDown(servers.ports[0]!, { busyMs: 20, forMs: FAULT_MS });
    assert.ok(scripts > 10, `Redis was kept busy (${scripts} scripts)`);
    await decidedByRedisSince(workers, nowMs());
    assert.equal(errors(), 0);
  });

  test('through it all: every decision settled, none reached a caller as an error, no process crashed', async () => {
    const ends = await Promise.all(workers.map((w) => w.stop()));
    for (const end of ends) {
      assert.deepEqual({ code: end.code, signal: end.signal }, { code: 0, signal: null }, end.stderr);
      assert.equal(end.last.done, true);
      assert.equal(end.last.unsettled, undefined, 'every decision settled');
      assert.equal(end.last.errors, 0, `no errors reached a caller: ${end.last.error}`);
      assert.equal(end.last.unhandled, 0, 'no unhandled rejections');
      assert.ok(end.last.settled > 500, `the load ran (${end.last.settled} decisions)`);
      assert.ok((end.last.reasons.ok ?? 0) > 0);
    }
  });
});
