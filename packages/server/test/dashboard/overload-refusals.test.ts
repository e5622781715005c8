/**
 * The dashboard's recent refusals count the overload protection's sheds, against a gateway
 * process: a route of one slot, its upstream holding the first request, sheds the next ones, and
 * the snapshot's refusals show each (scope, rule `overload`, the tier, the reason) instead of 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';

const TOKEN = 'admin-token-for-the-overload-refusals-test';

describe('overload sheds among the recent refusals', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(
      `
admin: { tokenEnv: FG_TEST_ADMIN_TOKEN }
routes:
  - name: api
    upstream: ${upstream.origin}
    concurrency: { limit: 1 }
`,
      { env: { FG_TEST_ADMIN_TOKEN: TOKEN } },
    );
    await gw.waitForLog('ready');
  });
  after(async () => {
    upstream?.release();
    await gw?.stop();
    await upstream?.close();
  });

  it('records each shed request, so the section does not read 0 while the guard sheds', async () => {
    const held = call(gw.url('/hold/1'));
    for (let i = 0; i < 200 && upstream.received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const shed = [await call(gw.url('/x/1')), await call(gw.url('/x/2'))];
    assert.deepEqual(
      shed.map((r) => r.status),
      [503, 503],
    );
    upstream.release();
    assert.equal((await held).status, 200);
    const snapshot = await call(gw.adminUrl('/dashboard/snapshot.json'), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(snapshot.status, 200);
    const view = JSON.parse(snapshot.body) as {
      refusalsTotal: number;
      refusals: Array<{ route: string; rule: string; key: string; reason: string }>;
    };
    assert.equal(view.refusalsTotal, 2);
    assert.deepEqual(
      view.refusals.map((r) => [r.route, r.rule, r.key, r.reason]),
      [
        ['route:api', 'overload', 'tier:default', 'limit'],
        ['route:api', 'overload', 'tier:default', 'limit'],
      ],
    );
  });
});
