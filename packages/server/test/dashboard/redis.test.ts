/**
 * The dashboard of a gateway on a real Redis: store latency from real round trips, the failure
 * policy and the store's errors while Redis is killed, hashed keys, and the config after a reload.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import type { DashboardView } from '../../src/dashboard/view.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';

const TOKEN = 'dashboard-redis-token-0123456789';

function config(redisPort: number, upstream: string, limit: number): string {
  return `
admin: { tokenEnv: FG_DASHBOARD_TOKEN, dashboard: { keys: hash } }
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", timeoutMs: 100, onError: fail-open, prefix: "fg-dash-${process.pid}:" }
routes:
  - name: api
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: fixedWindow, limit: ${limit}, windowMs: 600000 }
        key: { type: header, name: x-client }
`;
}

async function view(gw: GatewayProcess): Promise<DashboardView> {
  const reply = await call(gw.adminUrl('/dashboard/snapshot.json'), { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(reply.status, 200, reply.body);
  return JSON.parse(reply.body) as DashboardView;
}

describe('the dashboard of a gateway on a real Redis', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
    gw = await startGateway(config(redis.ports[0]!, upstream.origin, 3), { env: { FG_DASHBOARD_TOKEN: TOKEN } });
    await gw.waitForLog('ready');
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await redis?.stop();
  });

  it('shows real round trips, and refusals under hashed keys only', async () => {
    for (let i = 0; i < 6; i++) await call(gw.url('/x'), { headers: { 'x-client': 'secret-client-name' } });
    const v = await view(gw);
    assert.equal(v.store.kind, 'redis');
    // Refusals past the first may be answered by the store's over-limit cache without a round trip.
    assert.ok(v.store.health.calls >= 4, `round trips seen: ${v.store.health.calls}`);
    assert.ok(v.store.health.p50Ms !== undefined && v.store.health.p50Ms > 0 && v.store.health.p50Ms < 100);
    assert.equal(v.rules[0]!.rates.limited.total, 3);
    assert.match(v.refusals[0]!.key, /^#[A-Za-z0-9_-]{12}$/);
    assert.equal(v.rules[0]!.overLimit[0]!.key, v.refusals[0]!.key, 'the same client reads the same');
    const html = (await call(gw.adminUrl('/dashboard'), { headers: { authorization: `Bearer ${TOKEN}` } })).body;
    assert.ok(!html.includes('secret-client-name'), 'the key never reaches the page');
  });

  it('shows the store failing and its failure policy deciding while Redis is down, then healthy again', async () => {
    await redis.kill(0);
    try {
      for (let i = 0; i < 4; i++)
        assert.equal(
          (await call(gw.url('/x'), { headers: { 'x-client': `c${i}` } })).headers['floodgate-degraded'],
          'fail-open',
        );
      const down = await view(gw);
      assert.ok(down.rules[0]!.rates.degraded.total >= 4, `degraded: ${down.rules[0]!.rates.degraded.total}`);
      assert.ok(
        (down.store.health.errorsByPolicy['fail-open'] ?? 0) >= 4,
        JSON.stringify(down.store.health.errorsByPolicy),
      );
      assert.ok(down.store.health.failedCalls >= 1);
      assert.ok(down.store.health.lastError !== undefined);
    } finally {
      await redis.restart(0);
    }
    const back = performance.now();
    let healthy = false;
    while (!healthy && performance.now() - back < 5_000) {
      healthy =
        (await call(gw.url('/x'), { headers: { 'x-client': 'after' } })).headers['floodgate-degraded'] === undefined;
      if (!healthy) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(healthy, 'decided by Redis again');
    const v = await view(gw);
    assert.ok(
      Object.values(v.store.health.circuits).every((state) => state === 'closed'),
      JSON.stringify(v.store.health.circuits),
    );
  });

  it('shows the new config and when it was loaded after a reload', async () => {
    const before = await view(gw);
    const from = gw.logs.length;
    await gw.writeConfig(config(redis.ports[0]!, upstream.origin, 7));
    await gw.waitForLog('config reloaded', from);
    const after = await view(gw);
    assert.ok(Date.parse(after.config.loadedAt) > Date.parse(before.config.loadedAt));
    assert.match(after.rules[0]!.policy, /q=7/);
    assert.match(after.config.text, /"limit": 7/);
    assert.ok(!after.config.text.includes(TOKEN));
  });
});
