/**
 * The drain period on SIGTERM, against a real gateway process and a real upstream: unready at
 * once while the listener still serves new connections, then the listener closes and the request
 * in flight finishes before the process exits 0; a second signal cuts the waits short.
 */
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { describe, it } from 'node:test';
import { startGateway } from './support/gateway-process.js';
import { call } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

function config(upstream: string, drainMs: number): string {
  return `
shutdown: { drainMs: ${drainMs} }
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
  - name: held
    match: { path: /hold/* }
    upstream: ${upstream}
`;
}

/** One GET on a connection of its own (no keep-alive pool): resolves with the status, rejects when the connection is refused. */
function freshGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

/** Sends a GET the upstream holds, and resolves (with the reply still to come) once the upstream has it. */
async function heldUntilReceived(
  upstream: TestUpstream,
  path: string,
  url: string,
): Promise<{ reply: Promise<number> }> {
  const reply = freshGet(url);
  reply.catch(() => {});
  while (!upstream.received.some((r) => r.url === path)) await new Promise((r) => setTimeout(r, 10));
  return { reply };
}

describe('the drain period on SIGTERM', () => {
  it('answers readyz 503 while new connections are still served, then refuses them, finishes the request in flight and exits 0', async () => {
    const upstream = await startUpstream();
    const gw = await startGateway(config(upstream.origin, 5_000));
    try {
      await gw.waitForLog('ready');
      const { reply: inFlight } = await heldUntilReceived(upstream, '/hold/1', gw.url('/hold/1'));
      const from = gw.logs.length;
      gw.child.kill('SIGTERM');
      const draining = await gw.waitForLog('shutting down: unready, still serving until the drain period ends', from);
      assert.equal(draining.drainMs, 5_000);
      assert.equal((await call(gw.adminUrl('/readyz'))).status, 503, 'unready at once');
      assert.equal(await freshGet(gw.url('/api/a')), 200, 'a new connection during the drain period is served');
      assert.equal(await freshGet(gw.url('/api/b')), 200);

      await gw.waitForLog('shutting down: draining requests in flight', from, 15_000);
      // A connection that reaches the listener's backlog as it closes is reset rather than refused: either way, not served.
      await assert.rejects(
        freshGet(gw.url('/api/c')),
        /ECONNREFUSED|ECONNRESET/,
        'after the drain period the listener is closed',
      );
      upstream.release();
      assert.equal(await inFlight, 200, 'the request in flight since before SIGTERM is answered');
      assert.equal(await gw.stop(), 0);
      assert.deepEqual(
        upstream.received.map((r) => r.url),
        ['/hold/1', '/api/a', '/api/b'],
      );
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  it('cuts the drain period and the wait for requests in flight short on a second signal, and exits 0', async () => {
    const upstream = await startUpstream();
    // A drain period no test waits out: only the second signal can end it.
    const gw = await startGateway(config(upstream.origin, 600_000));
    try {
      await gw.waitForLog('ready');
      const { reply: inFlight } = await heldUntilReceived(upstream, '/hold/2', gw.url('/hold/2'));
      const from = gw.logs.length;
      gw.child.kill('SIGTERM');
      await gw.waitForLog('shutting down: unready, still serving until the drain period ends', from);
      assert.equal(await freshGet(gw.url('/api/a')), 200);
      gw.child.kill('SIGINT');
      await gw.waitForLog('shutting down now: the drain was cut short', from);
      await assert.rejects(inFlight, 'the request still held upstream is cut with its connection');
      assert.equal(await gw.stop(30_000), 0, 'the process exits 0, long before the drain period would end');
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  it('with drainMs 0 (the flag over the config), refuses new connections at once', async () => {
    const upstream = await startUpstream();
    const gw = await startGateway(config(upstream.origin, 600_000), { args: ['--drain-ms', '0'] });
    try {
      await gw.waitForLog('ready');
      const from = gw.logs.length;
      gw.child.kill('SIGTERM');
      await gw.waitForLog('shutting down: draining requests in flight', from);
      await assert.rejects(freshGet(gw.url('/api/a')), /ECONNREFUSED|ECONNRESET/);
      assert.equal(await gw.stop(), 0);
      assert.equal(gw.logs.slice(from).filter((l) => l.msg?.includes('drain period') === true).length, 0);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });
});
