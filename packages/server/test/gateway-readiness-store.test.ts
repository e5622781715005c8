/**
 * Readiness follows what the gateway can serve, against a gateway process on a real Redis that
 * the test kills and restarts: under `onError: fail-closed` a store away answers every request
 * 503, so `/readyz` answers 503 (and `floodgate_ready` is 0) until the store is back; under
 * `onError: local` requests are still decided (locally), so it stays ready.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

function config(redisPort: number, upstream: string, onError: string, prefix: string): string {
  return `
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", timeoutMs: 200, onError: ${onError}, prefix: "${prefix}" }
routes:
  - name: api
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: fixedWindow, limit: 100000, windowMs: 60000 }
`;
}

describe('readiness while the store is away', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let closed: GatewayProcess;
  let local: GatewayProcess;

  before(async () => {
    [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
    closed = await startGateway(config(redis.ports[0]!, upstream.origin, 'fail-closed', 'fg-rc:'));
    local = await startGateway(config(redis.ports[0]!, upstream.origin, 'local', 'fg-rl:'));
    await Promise.all([closed.waitForLog('ready'), local.waitForLog('ready')]);
  });
  after(async () => {
    await Promise.all([closed?.stop(), local?.stop()]);
    await upstream?.close();
    await redis?.stop();
  });

  /** Sends requests to `gw` until `check` holds (15 s at most: a bound, not a measurement); decisions are what tell the circuit. */
  async function trafficUntil(gw: GatewayProcess, what: string, check: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 750; i++) {
      if (await check()) return;
      await call(gw.url('/x')).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail(`never: ${what}`);
  }
  const readyz = async (gw: GatewayProcess): Promise<number> => (await call(gw.adminUrl('/readyz'))).status;
  const readyGauge = async (gw: GatewayProcess): Promise<number> =>
    metricValue((await call(gw.adminUrl('/metrics'))).body, 'floodgate_ready');

  it('fail-closed: unready while every request is refused 503, ready again once the store is back', async () => {
    assert.equal(await readyz(closed), 200);
    await redis.kill(0);
    try {
      await trafficUntil(closed, 'fail-closed answers 503', async () => (await call(closed.url('/x'))).status === 503);
      await trafficUntil(closed, 'readyz answers 503', async () => (await readyz(closed)) === 503);
      assert.equal((await call(closed.url('/y'))).status, 503, 'requests are refused meanwhile');
      assert.equal(await readyGauge(closed), 0);
      await trafficUntil(local, 'the local gateway hears the outage', async () =>
        local.logs.some((l) => String(l.msg).startsWith('store away')),
      );
      assert.equal(await readyz(local), 200, 'onError local still decides every request: ready');
      assert.equal((await call(local.url('/z'))).status, 200);
    } finally {
      await redis.restart(0);
    }
    await trafficUntil(closed, 'readyz answers 200 again', async () => (await readyz(closed)) === 200);
    assert.equal((await call(closed.url('/after'))).status, 200);
    assert.equal(await readyGauge(closed), 1);
  });
});
