import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

function config(upstream: string, steadyLimit: number, extraRoute = ''): string {
  return `
routes:
  - name: steady
    match: { path: /steady }
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: tokenBucket, capacity: ${steadyLimit}, refillPerSecond: 0.000001 }
  - name: busy
    match: { path: /busy }
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: tokenBucket, capacity: 100000, refillPerSecond: 100000 }
${extraRoute}
  - name: held
    match: { path: /hold/* }
    upstream: ${upstream}
`;
}

const remainingOf = (header: unknown): number => Number(/r=(\d+)/.exec(String(header))![1]);

describe('hot reload under traffic', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;
  let traffic: Promise<{ statuses: Map<number, number>; errors: number }> | undefined;
  let running = true;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(config(upstream.origin, 10));
    await gw.waitForLog('ready');
  });
  after(async () => {
    running = false;
    await traffic;
    await gw?.stop();
    await upstream?.close();
  });

  it('keeps the counters of unchanged rules, applies new routes, refuses a bad file and keeps serving', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await call(gw.url('/steady'))).status, 200);
    traffic = (async () => {
      const statuses = new Map<number, number>();
      let errors = 0;
      while (running) {
        try {
          const r = await call(gw.url('/busy'));
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        } catch {
          errors++;
        }
      }
      return { statuses, errors };
    })();

    const before1 = gw.logs.length;
    const written = performance.now();
    await gw.writeConfig(
      config(upstream.origin, 10, `  - name: added\n    match: { path: /added }\n    upstream: ${upstream.origin}\n`),
    );
    const reloaded = await gw.waitForLog('config reloaded', before1, 5_000);
    const seenAfterMs = performance.now() - written;
    assert.equal(reloaded.keptLimiters, 2, 'both unchanged rules keep their limiter');
    assert.ok((reloaded.tookMs as number) < 1000, `the reload itself took ${String(reloaded.tookMs)} ms`);
    assert.ok(seenAfterMs < 5_000);
    const steady = await call(gw.url('/steady'));
    assert.equal(remainingOf(steady.headers.ratelimit), 5, 'the steady rule kept its count (10 - 4 - 1)');
    assert.equal((await call(gw.url('/added'))).status, 200, 'the new route serves');

    const before2 = gw.logs.length;
    await gw.writeConfig('routes:\n  - name: steady\n    upstream: not-a-url\n    colour: red\n');
    const rejected = await gw.waitForLog('config reload rejected; the running config stays in force', before2, 5_000);
    assert.equal((rejected.problems as string[]).length, 2);
    assert.match(
      (rejected.problems as string[]).join('\n'),
      /floodgate\.yaml:4:\d+ routes\[0\]\.colour: unknown key "colour"/,
    );
    const still = await call(gw.url('/steady'));
    assert.equal(remainingOf(still.headers.ratelimit), 4, 'the old config still serves, counters intact');
    assert.equal((await call(gw.url('/added'))).status, 200);

    const before3 = gw.logs.length;
    await gw.writeConfig(config(upstream.origin, 20));
    const changed = await gw.waitForLog('config reloaded', before3, 5_000);
    assert.equal(changed.keptLimiters, 1, 'only the unchanged rule keeps its limiter');
    const fresh = await call(gw.url('/steady'));
    assert.equal(remainingOf(fresh.headers.ratelimit), 19, 'a changed policy starts afresh');
    assert.equal((await call(gw.url('/added'))).status, 404, 'the removed route is gone');

    const before4 = gw.logs.length;
    gw.child.kill('SIGHUP');
    const hup = await gw.waitForLog('config reloaded', before4, 5_000);
    assert.equal(hup.why, 'SIGHUP');
    assert.equal(hup.keptLimiters, 2);

    running = false;
    const { statuses, errors } = await traffic;
    traffic = undefined;
    assert.equal(errors, 0, 'no request failed during the reloads');
    assert.deepEqual([...statuses.keys()], [200]);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    assert.equal(metricValue(metrics, 'floodgate_config_reloads_total', { result: 'rejected' }), 1);
    assert.equal(metricValue(metrics, 'floodgate_config_reloads_total', { result: 'applied' }), 3);
  });
});

describe('graceful shutdown', () => {
  it('turns unready at once on SIGTERM, drains the request in flight, then exits 0', async () => {
    const upstream = await startUpstream();
    const gw = await startGateway(config(upstream.origin, 10));
    try {
      await gw.waitForLog('ready');
      assert.equal((await call(gw.adminUrl('/readyz'))).status, 200);
      const inFlight = call(gw.url('/hold/1'));
      while (!upstream.received.some((r) => r.url === '/hold/1')) await new Promise((r) => setTimeout(r, 10));
      const from = gw.logs.length;
      gw.child.kill('SIGTERM');
      await gw.waitForLog('shutting down: draining requests in flight', from, 5_000);
      assert.equal((await call(gw.adminUrl('/readyz'))).status, 503, 'unready while draining');
      await assert.rejects(call(gw.url('/steady')), 'no new connections are accepted');
      upstream.release();
      const reply = await inFlight;
      assert.equal(reply.status, 200);
      assert.equal(reply.body, 'released', 'the request in flight was answered in full');
      assert.equal(await gw.stop(), 0);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });
});
