import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/config/problems.js';
import { Board } from '../../src/dashboard/board.js';
import { mountDashboard } from '../../src/dashboard/mount.js';
import type { RouteTable } from '../../src/gateway/routes.js';
import { adminHandler, tokenDigest, type AdminContext } from '../../src/process/admin.js';
import { GatewayMetrics } from '../../src/ops/metrics.js';

const ROUTES = 'routes:\n  - name: a\n    upstream: http://127.0.0.1:1\n';
const TOKEN = 'dashboard-config-token-0123456789';

describe('admin.dashboard in the config', () => {
  it('defaults to on with keys in full, and takes truncate, hash or off', () => {
    assert.equal(parseConfig(`admin: { token: ${TOKEN} }\n${ROUTES}`, 'x.yaml', {}).admin?.dashboard, undefined);
    assert.deepEqual(
      parseConfig(`admin: { token: ${TOKEN}, dashboard: { keys: hash } }\n${ROUTES}`, 'x.yaml', {}).admin?.dashboard,
      { enabled: true, keys: 'hash' },
    );
    assert.deepEqual(
      parseConfig(`admin: { token: ${TOKEN}, dashboard: { enabled: false } }\n${ROUTES}`, 'x.yaml', {}).admin
        ?.dashboard,
      { enabled: false, keys: 'full' },
    );
  });

  it('refuses an unknown key display or setting, naming the line and path', () => {
    const text = `admin:\n  token: ${TOKEN}\n  dashboard:\n    keys: plain\n    colour: blue\n${ROUTES}`;
    try {
      parseConfig(text, 'x.yaml', {});
      assert.fail('accepted');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      const found = err.problems.map((p) => [p.line, p.path]);
      assert.deepEqual(found, [
        [4, 'admin.dashboard.keys'],
        [5, 'admin.dashboard.colour'],
      ]);
      assert.match(err.problems[0]!.message, /"full"\|"truncate"\|"hash"/);
    }
  });
});

describe('/dashboard on the admin listener', () => {
  async function adminServer(dashboard: boolean): Promise<{ server: Server; base: string }> {
    const metrics = new GatewayMetrics();
    const digest = tokenDigest(TOKEN);
    const mounted = mountDashboard({
      board: new Board(),
      metrics,
      tokenDigest: digest,
      settings: { enabled: dashboard, keys: 'full' },
      storeKind: 'memory',
      table: () => ({ routes: [], guards: { all: [] } }) as unknown as RouteTable,
      activeConfig: () => ({ file: 'x.yaml', loadedAt: '2026-01-01T00:00:00.000Z', config: {} }),
      isReady: () => true,
    });
    assert.equal(mounted === undefined, !dashboard, 'enabled: false mounts nothing');
    const ctx: AdminContext = {
      metrics,
      tokenDigest: digest,
      isReady: () => true,
      rule: () => undefined,
      activeConfig: () => ({}),
      reload: async () => ({ applied: true, problems: [] }),
      dashboard: mounted?.endpoints,
    };
    const server = createServer(adminHandler(ctx));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  it('serves the dashboard beside the admin API, and says how to turn it on when it is off', async () => {
    for (const on of [true, false]) {
      const { server, base } = await adminServer(on);
      try {
        const page = await request(`${base}/dashboard`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const body = await page.body.text();
        assert.equal(page.statusCode, on ? 200 : 404);
        if (!on) assert.match(body, /the dashboard is off/);
        const health = await request(`${base}/healthz`);
        await health.body.text();
        assert.equal(health.statusCode, 200);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });

  it('gives no dashboard without an admin token', () => {
    const mounted = mountDashboard({
      board: new Board(),
      metrics: new GatewayMetrics(),
      tokenDigest: undefined,
      settings: undefined,
      storeKind: 'memory',
      table: () => ({ routes: [], guards: { all: [] } }) as unknown as RouteTable,
      activeConfig: () => ({ file: '', loadedAt: '', config: {} }),
      isReady: () => true,
    });
    assert.equal(mounted, undefined);
  });
});
