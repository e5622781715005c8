/**
 * Reservations across real processes, on real time: three `floodgate ratelimit` processes on one
 * redis-server, asked by `RateLimitClient.reserve` all at once. The fleet's limiter is one: sorted,
 * the k-th wait is at most k/rate and at least k/rate minus the time the batch took (the k-th
 * reservation starts k/rate after the first, and was made at most that long after it). Then
 * failures: a hung Redis (SIGSTOP) answered by the store's `onError` (the local share, or 503), a
 * dead service by the client's `onError`, and a gRPC client cannot reserve.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FloodgateError } from 'floodgate';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { RateLimitClient } from '../../src/ratelimit/index.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';

const RATE = 50;
const INTERVAL_MS = 1000 / RATE;

describe('reservations from three service processes on one Redis', () => {
  let dir: string;
  let redis: RedisServers;
  let processes: ServiceProcess[] = [];
  let clients: RateLimitClient[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-reserve-'));
    await writeFile(
      join(dir, 'smooth.yaml'),
      `domain: partners\nsmooth_limits:\n  - { name: partner-api, permits_per_second: ${RATE}, max_burst_seconds: 0 }\n` +
        '  - { name: slow, permits_per_second: 0.01, max_burst_seconds: 0 }\n',
    );
    redis = await startRedisServer();
    const args = ['--config', join(dir, 'smooth.yaml'), '--redis', `127.0.0.1:${redis.ports[0]!}`];
    processes = await Promise.all([0, 1, 2].map(() => startServiceProcess(args)));
    clients = processes.map((p) => new RateLimitClient({ url: `http://127.0.0.1:${p.httpPort}`, timeoutMs: 5000 }));
  });
  after(async () => {
    for (const c of clients) await c.close();
    for (const p of processes) await p.stop();
    await redis?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('spaces the fleet’s reservations by 1/rate', async () => {
    const startedMs = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        clients[i % 3]!.reserve({ domain: 'partners', name: 'partner-api', key: 'acme' }),
      ),
    );
    const batchMs = performance.now() - startedMs;
    assert.ok(answers.every((a) => a.admitted && a.reason === 'ok'));
    const waits = answers.map((a) => a.waitMs!).sort((a, b) => a - b);
    waits.forEach((wait, k) => {
      assert.ok(wait <= k * INTERVAL_MS + 0.001, `wait ${k} is ${wait} ms, past ${k * INTERVAL_MS} ms`);
      assert.ok(wait >= k * INTERVAL_MS - batchMs, `wait ${k} is ${wait} ms, under ${k * INTERVAL_MS} - ${batchMs} ms`);
    });
    // Another key has its own limiter.
    const other = await clients[0]!.reserve({ domain: 'partners', name: 'partner-api', key: 'globex' });
    assert.deepEqual(other, { admitted: true, waitMs: 0, reason: 'ok' });
  });

  it('reserves only a wait that fits maxWaitMs, and reserves nothing otherwise', async () => {
    // One permit per 100 s: the steps below take far less, so each answer is known.
    const key = { domain: 'partners', name: 'slow', key: 'initech' };
    assert.deepEqual(await clients[0]!.reserve({ ...key, maxWaitMs: 0 }), { admitted: true, waitMs: 0, reason: 'ok' });
    const refused = await clients[1]!.reserve({ ...key, permits: 5, maxWaitMs: 0 });
    assert.deepEqual(refused, { admitted: false, waitMs: null, reason: 'limit' });
    const later = await clients[2]!.reserve({ ...key, maxWaitMs: 200_000 });
    assert.ok(
      later.admitted && later.waitMs! > 90_000 && later.waitMs! <= 100_000,
      `the refused one took nothing: ${later.waitMs} ms`,
    );
  });

  it('Redis hung (SIGSTOP): the default answers from its local share, --on-store-error throw answers 503, both promptly', async () => {
    const throwing = await startServiceProcess([
      '--config',
      join(dir, 'smooth.yaml'),
      '--redis',
      `127.0.0.1:${redis.ports[0]!}`,
      '--on-store-error',
      'throw',
    ]);
    const strict = new RateLimitClient({ url: `http://127.0.0.1:${throwing.httpPort}`, timeoutMs: 5000 });
    const ask = { domain: 'partners', name: 'partner-api', key: 'hung' };
    try {
      assert.equal((await strict.reserve(ask)).admitted, true);
      redis.signal(0, 'SIGSTOP');
      const local = await clients[0]!.reserve(ask);
      assert.equal(local.admitted, true, 'the local fallback reserves at its share of the rate');
      await assert.rejects(
        strict.reserve(ask),
        (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_ERROR',
      );
    } finally {
      redis.signal(0, 'SIGCONT');
      await strict.close();
      await throwing.stop();
    }
    const back = await clients[1]!.reserve({ ...ask, key: 'after-the-hang' });
    assert.deepEqual(back, { admitted: true, waitMs: 0, reason: 'ok' });
  });

  it('answers a dead service by onError, rejects an unknown limit, and needs the JSON API', async () => {
    await assert.rejects(
      clients[0]!.reserve({ domain: 'partners', name: 'nope' }),
      (e: unknown) =>
        e instanceof FloodgateError && e.code === 'INVALID_OPTION' && /declares partner-api/.test(e.message),
    );
    const grpc = new RateLimitClient({ url: `grpc://127.0.0.1:${processes[0]!.grpcPort}` });
    await assert.rejects(
      grpc.reserve({ domain: 'partners', name: 'partner-api' }),
      (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && /http:\/\//.test(e.message),
    );
    await grpc.close();
    const url = `http://127.0.0.1:${processes[2]!.httpPort}`;
    await processes[2]!.stop();
    const open = new RateLimitClient({ url, onError: 'fail-open' });
    const closed = new RateLimitClient({ url, onError: 'fail-closed' });
    const throwing = new RateLimitClient({ url });
    const ask = { domain: 'partners', name: 'partner-api' };
    assert.deepEqual(await open.reserve(ask), { admitted: true, waitMs: 0, reason: 'fail-open' });
    assert.deepEqual(await closed.reserve(ask), { admitted: false, waitMs: null, reason: 'fail-closed' });
    await assert.rejects(
      throwing.reserve(ask),
      (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_ERROR',
    );
    for (const c of [open, closed, throwing]) await c.close();
  });
});
