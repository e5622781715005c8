/**
 * refundOn, against a gateway process with real upstreams that fail (a closed port, an upstream
 * that never answers past the upstream timeout) and a body over the size limit, on the memory
 * store and on a real Redis: a rule listing the status gets its cost back, a rule beside it that
 * does not list it stays charged, and an upstream's own 502 or a client that left is never refunded.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { closedPort } from './support/ports.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TOKEN = 'admin-token-for-the-refund-tests-0123';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const CAPACITY = 10;

function rules(): string {
  // Token buckets that refill too slowly to matter within a test (one token per 28 hours).
  const policy = `{ algorithm: tokenBucket, capacity: ${CAPACITY}, refillPerSecond: 0.00001 }`;
  return `
    rules:
      - name: refunded
        policy: ${policy}
        refundOn: [502, 504, 413]
      - name: kept
        policy: ${policy}`;
}

function config(store: string, upstream: string, deadPort: number): string {
  return `
admin: { tokenEnv: FG_TEST_ADMIN_TOKEN }
store: ${store}
limits: { maxBodyBytes: 1024, upstreamTimeoutMs: 400 }
routes:
  - name: dead
    match: { path: /dead/* }
    upstream: http://127.0.0.1:${deadPort}${rules()}
  - name: hanging
    match: { path: /never/* }
    upstream: ${upstream}${rules()}
  - name: upload
    match: { path: /upload/* }
    upstream: ${upstream}${rules()}
  - name: own
    match: { path: /status/* }
    upstream: ${upstream}${rules()}
  - name: held
    match: { path: /hold/* }
    upstream: ${upstream}${rules()}
`;
}

async function remaining(gw: GatewayProcess, route: string, rule: string): Promise<number> {
  const q = `?route=${route}&rule=${rule}&identity=ip:127.0.0.1`;
  const reply = await call(gw.adminUrl(`/admin/keys${q}`), { headers: AUTH });
  assert.equal(reply.status, 200, reply.body);
  return (JSON.parse(reply.body) as { state: { remaining: number } }).state.remaining;
}

/** The route's two counts once the refunds sent for its answered requests have landed (a Redis refund is sent after the answer). */
async function settled(gw: GatewayProcess, route: string, expectRefunded: number): Promise<[number, number]> {
  const deadline = performance.now() + 5_000;
  let refunded = await remaining(gw, route, 'refunded');
  while (refunded !== expectRefunded && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    refunded = await remaining(gw, route, 'refunded');
  }
  return [refunded, await remaining(gw, route, 'kept')];
}

/** A request whose client leaves once the upstream has it (the upstream holds `/hold`). */
function leaveWhileHeld(gw: GatewayProcess, upstream: TestUpstream): Promise<void> {
  return new Promise((resolve) => {
    const req = request(gw.url('/hold/1'), { agent: false });
    req.on('error', () => resolve());
    req.end();
    const poll = setInterval(() => {
      if (!upstream.received.some((r) => r.url === '/hold/1')) return;
      clearInterval(poll);
      req.destroy();
    }, 10);
  });
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`refundOn on the ${storeKind} store`, () => {
    let redis: RedisServers | undefined;
    let upstream: TestUpstream;
    let gw: GatewayProcess;

    before(async () => {
      upstream = await startUpstream();
      let store = '{ type: memory }';
      if (storeKind === 'redis') {
        redis = await startRedisServer();
        store = `{ type: redis, url: "redis://127.0.0.1:${redis.ports[0]!}", prefix: "fg-refund-${process.pid}:" }`;
      }
      gw = await startGateway(config(store, upstream.origin, await closedPort()), {
        env: { FG_TEST_ADMIN_TOKEN: TOKEN },
      });
      await gw.waitForLog('ready');
    });
    after(async () => {
      await gw?.stop();
      await upstream?.close();
      await redis?.stop();
    });

    it('gives back what a 502 for an upstream on a closed port spent, only under the rule that lists it', async () => {
      for (let i = 0; i < 3; i++) assert.equal((await call(gw.url('/dead/x'))).status, 502);
      assert.deepEqual(await settled(gw, 'dead', CAPACITY), [CAPACITY, CAPACITY - 3]);
    });

    it('gives back what a 504 for an upstream that never answers spent', async () => {
      for (let i = 0; i < 2; i++) assert.equal((await call(gw.url('/never/x'))).status, 504);
      assert.deepEqual(await settled(gw, 'hanging', CAPACITY), [CAPACITY, CAPACITY - 2]);
    });

    it('gives back what a 413 for a body over maxBodyBytes spent', async () => {
      const body = Buffer.alloc(4096, 'x');
      for (let i = 0; i < 2; i++) assert.equal((await call(gw.url('/upload/x'), { method: 'POST', body })).status, 413);
      assert.equal((await call(gw.url('/upload/x'), { method: 'POST', body: 'small' })).status, 200);
      assert.deepEqual(await settled(gw, 'upload', CAPACITY - 1), [CAPACITY - 1, CAPACITY - 3]);
    });

    it("keeps the charge of an upstream's own 502 and of a client that left", async () => {
      assert.equal((await call(gw.url('/status/502'))).status, 502);
      await leaveWhileHeld(gw, upstream);
      // The gateway has settled the exchange (and would have refunded it) once it counts the 499.
      while (
        metricValue((await call(gw.adminUrl('/metrics'))).body, 'floodgate_responses_total', {
          route: 'held',
          status: '499',
        }) === 0
      )
        await new Promise((r) => setTimeout(r, 25));
      assert.deepEqual(await settled(gw, 'own', CAPACITY - 1), [CAPACITY - 1, CAPACITY - 1]);
      assert.deepEqual(await settled(gw, 'held', CAPACITY - 1), [CAPACITY - 1, CAPACITY - 1]);
    });

    it('counts each refund under the outcome refunded', async () => {
      const metrics = (await call(gw.adminUrl('/metrics'))).body;
      const refunds = (route: string, rule: string): number =>
        metricValue(metrics, 'floodgate_decisions_total', { route, rule, outcome: 'refunded' });
      assert.deepEqual(
        [refunds('dead', 'refunded'), refunds('hanging', 'refunded'), refunds('upload', 'refunded')],
        [3, 2, 2],
      );
      assert.equal(refunds('dead', 'kept') + refunds('own', 'refunded') + refunds('held', 'refunded'), 0);
    });
  });
}
