/**
 * The rate limit service inside `floodgate serve` on a real Redis: two gateway processes hold one
 * descriptor limit exactly, through the gateway's own store (its store metrics see the calls), and
 * a call in flight while Redis hangs is answered before the process exits on SIGTERM.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { GrpcRls, rl } from './ratelimit/support.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function config(redisPort: number, descriptorFile: string): string {
  return `
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", timeoutMs: 3000, onError: fail-open, prefix: "fg-rls-test-${process.pid}:" }
rateLimitService:
  grpc: { port: 0 }
  descriptors: [${JSON.stringify(descriptorFile)}]
`;
}

describe('the rate limit service of floodgate serve on a real Redis', () => {
  let redis: RedisServers;
  let dir: string;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let clientA: GrpcRls;
  let clientB: GrpcRls;

  before(async () => {
    redis = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), 'floodgate-rls-redis-'));
    const descriptorFile = join(dir, 'ratelimit.yaml');
    await writeFile(
      descriptorFile,
      'domain: api\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n',
    );
    [a, b] = await Promise.all([
      startGateway(config(redis.ports[0]!, descriptorFile)),
      startGateway(config(redis.ports[0]!, descriptorFile)),
    ]);
    await Promise.all([a.waitForLog('ready'), b.waitForLog('ready')]);
    clientA = new GrpcRls(a.logs.find((l) => l.msg === 'listening')!.grpcPort as number);
    clientB = new GrpcRls(b.logs.find((l) => l.msg === 'listening')!.grpcPort as number);
  });
  after(async () => {
    clientA?.close();
    clientB?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("two gateway processes hold one descriptor limit exactly, through the gateway's store", async () => {
    const calls = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? clientA : clientB).call(rl('api', [[['tenant', 'shared']]])),
    );
    const answers = await Promise.all(calls);
    const admitted = answers.filter((r) => r.overall_code === 'OK');
    assert.equal(admitted.length, 5);
    assert.deepEqual(admitted.map((r) => r.statuses[0]!.limit_remaining).sort(), [0, 1, 2, 3, 4]);
    const metrics = (await call(a.adminUrl('/metrics'))).body;
    // The service's calls go through the gateway's store (timed in its metrics); concurrent
    // single-descriptor calls share the tick's batch script, so at most one round trip per call.
    const roundTrips = metricValue(metrics, 'floodgate_store_duration_seconds_count', { result: 'ok' });
    assert.ok(
      roundTrips >= 1 && roundTrips <= 6,
      `the service's round trips are the gateway store's, at most one per call: ${roundTrips}`,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_ratelimit_service_decisions_total', { domain: 'api', descriptor: 'tenant' }),
      6,
    );
  });

  it('answers a call in flight while Redis hangs before exiting on SIGTERM', async () => {
    redis.signal(0, 'SIGSTOP');
    let resumed = false;
    try {
      const pending = clientA.call(rl('api', [[['tenant', 'drain']]]));
      await sleep(200);
      a.child.kill('SIGTERM');
      await a.waitForLog('shutting down: draining requests in flight', 0, 5_000);
      await sleep(200);
      assert.equal(a.child.exitCode, null, 'still draining while the call waits on Redis');
      redis.signal(0, 'SIGCONT');
      resumed = true;
      const answer = await pending;
      assert.equal(answer.overall_code, 'OK');
      assert.equal(answer.statuses[0]!.limit_remaining, 4, 'decided by Redis, not by the failure policy');
      assert.equal(await a.stop(), 0);
    } finally {
      if (!resumed) redis.signal(0, 'SIGCONT');
    }
  });
});
