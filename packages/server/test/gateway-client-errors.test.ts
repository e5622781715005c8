/**
 * The client's failures told apart from the upstream's, with a gateway process, a real upstream
 * and real clients: a client that leaves before its answer is counted as 499 and logged at debug
 * only (never as an upstream failure), and a request the HTTP parser refuses is counted under the
 * route "(parser)" with its status and logged, at most once every 10 s.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

/** Sends `text` on a raw connection and resolves with what comes back before the gateway closes it. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

async function metrics(gw: GatewayProcess): Promise<string> {
  return (await call(gw.adminUrl('/metrics'))).body;
}

describe("a client's failures apart from the upstream's (a gateway process, a real upstream)", () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(`
routes:
  - name: api
    upstream: ${upstream.origin}
`);
  });

  after(async () => {
    upstream?.release();
    await gw?.stop();
    await upstream?.close();
  });

  it('a client that leaves while the upstream works is counted as 499, not as the upstream failing', async () => {
    const from = gw.logs.length;
    const held = upstream.received.length;
    const socket = connect(gw.port, '127.0.0.1', () => socket.write('GET /hold HTTP/1.1\r\nhost: gw\r\n\r\n'));
    socket.on('error', () => {});
    for (let i = 0; i < 200 && upstream.received.length === held; i++) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = await metrics(gw);
      if (metricValue(text, 'floodgate_responses_total', { route: 'api', status: '499' }) > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(metricValue(text, 'floodgate_responses_total', { route: 'api', status: '499' }), 1);
    assert.equal(metricValue(text, 'floodgate_responses_total', { route: 'api', status: '502' }), 0);
    assert.equal(gw.logs.slice(from).filter((l) => l.msg === 'upstream failed').length, 0);
    upstream.release();
  });

  it('requests the HTTP parser refuses are counted under "(parser)" and logged once per 10 s', async () => {
    const from = gw.logs.length;
    const answers = await Promise.all([0, 1, 2].map(() => raw(gw.port, 'GET / HTTP/1.1\r\nbad header line\r\n\r\n')));
    for (const a of answers) assert.match(a, /^HTTP\/1\.1 400 Bad Request/);
    const text = await metrics(gw);
    assert.equal(metricValue(text, 'floodgate_responses_total', { route: '(parser)', status: '400' }), 3);
    // The log lines come over the process's stdout, which can be read after the metrics answered.
    const logged = (): typeof gw.logs =>
      gw.logs.slice(from).filter((l) => l.msg === 'client error: the HTTP parser refused a request');
    for (let i = 0; i < 100 && logged().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    // Time for a second line, were one written, to come through the same pipe.
    await new Promise((r) => setTimeout(r, 300));
    const lines = logged();
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.status, 400);
  });
});
