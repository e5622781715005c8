/**
 * `limits.upstreamTimeoutMs` to the millisecond, against gateway processes in front of a real
 * upstream that never answers: a timeout of N ms answers 504 within N + 50 ms, for N of 100, 250
 * and 1500 (undici's own headers timeout, on its 499 ms ticks, answered a timeout of 200 after
 * about a second). The bound is the point here, so the test times it: the median of three, each
 * also under N + 400 ms, the slack for a loaded machine; never earlier than N.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const TIMEOUTS_MS = [100, 250, 1500];

describe('upstreamTimeoutMs to the millisecond', () => {
  let upstream: TestUpstream;
  const gateways = new Map<number, GatewayProcess>();

  before(async () => {
    upstream = await startUpstream();
    for (const timeoutMs of TIMEOUTS_MS) {
      const gw = await startGateway(`
limits: { upstreamTimeoutMs: ${timeoutMs} }
routes:
  - name: slow
    upstream: ${upstream.origin}
`);
      await gw.waitForLog('ready');
      gateways.set(timeoutMs, gw);
    }
  });
  after(async () => {
    await Promise.all([...gateways.values()].map((gw) => gw.stop()));
    await upstream?.close();
  });

  for (const timeoutMs of TIMEOUTS_MS)
    it(`answers 504 within ${timeoutMs} + 50 ms for upstreamTimeoutMs: ${timeoutMs}`, async (t) => {
      const gw = gateways.get(timeoutMs)!;
      // A first request opens the keep-alive connection, so the timed ones measure the timeout alone.
      assert.equal((await call(gw.url('/warm'))).status, 200);
      const elapsed: number[] = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const reply = await call(gw.url(`/never/${i}`));
        elapsed.push(performance.now() - started);
        assert.equal(reply.status, 504);
        assert.match(reply.body, /did not answer within its timeout/);
      }
      const median = [...elapsed].sort((a, b) => a - b)[1]!;
      const shown = elapsed.map((ms) => ms.toFixed(1)).join(', ');
      t.diagnostic(`upstreamTimeoutMs ${timeoutMs}: answered 504 after ${shown} ms`);
      for (const ms of elapsed) {
        assert.ok(ms >= timeoutMs - 1, `never before the timeout: ${shown} ms`);
        assert.ok(ms < timeoutMs + 400, `each within the slack: ${shown} ms`);
      }
      assert.ok(median < timeoutMs + 50, `the median within ${timeoutMs} + 50 ms: ${shown} ms`);
    });
});
