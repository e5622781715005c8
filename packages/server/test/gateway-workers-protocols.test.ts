/**
 * `floodgate serve` with 2 workers keeps what an operator relies on: TLS with HTTP/2 and HTTP/1.1
 * on one port, WebSocket upgrades proxied and limited as one limit for the host, and one access
 * log line per exchange from whichever worker served it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { CertDir, h2request, h2session, httpsGet, opensslMissing, type TestCert } from './support/tls.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';
import { upgrade } from './support/upgrade.js';

const skip = opensslMissing();

describe('floodgate serve with 2 workers: TLS, HTTP/2, WebSockets, the access log', { skip, timeout: 120_000 }, () => {
  let certs: CertDir;
  let cert: TestCert;
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    certs = new CertDir();
    cert = certs.make('workers');
    upstream = await startUpstream();
    gw = await startGateway(`
listen:
  tls: { certFile: ${cert.certFile}, keyFile: ${cert.keyFile} }
workers: 2
accessLog: { enabled: true }
routes:
  - name: sockets
    match: { path: /ws }
    upstream: ${upstream.origin}
    rules:
      - name: three
        policy: { algorithm: fixedWindow, limit: 3, windowMs: 3600000 }
        key: { type: route }
  - name: api
    upstream: ${upstream.origin}
`);
  });

  after(async () => {
    if (gw !== undefined) assert.equal(await gw.stop(), 0);
    await upstream?.close();
    certs?.remove();
  });

  test('HTTP/2 and HTTPS on one TLS port', async () => {
    const session = await h2session(gw.port, [cert.cert]);
    assert.equal((await h2request(session, { ':path': '/h2' })).status, 200);
    session.close();
    for (let i = 0; i < 10; i++) assert.equal((await httpsGet(gw.port, `/h1/${i}`, { ca: [cert.cert] })).status, 200);
  });

  test('WebSocket upgrades over TLS: proxied both ways, and 3 for the host, whichever worker takes each', async () => {
    const heads: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { head, socket } = await upgrade(gw.port, cert.cert);
      heads.push(head.split('\r\n')[0]!);
      if (i === 0) {
        const echoed = new Promise<string>((resolve) => socket.once('data', (c: Buffer) => resolve(c.toString())));
        socket.write('ping');
        assert.equal(await echoed, 'ping');
      }
      socket.destroy();
    }
    assert.deepEqual(
      heads.map((h) => /HTTP\/1\.1 (\d+)/.exec(h)?.[1]),
      ['101', '101', '101', '429', '429'],
    );
  });

  test('one access line per exchange, whole (two processes write to one stdout)', async () => {
    for (let i = 0; i < 40; i++) await httpsGet(gw.port, `/logged/${i}`, { ca: [cert.cert] });
    await new Promise((r) => setTimeout(r, 300));
    const lines = gw.logs.filter((l) => l.msg === 'access' && String(l.path).startsWith('/logged/'));
    assert.deepEqual(lines.map((l) => l.path).sort(), Array.from({ length: 40 }, (_, i) => `/logged/${i}`).sort());
    // Every line of the output parsed as JSON: no line written into the middle of another.
    assert.deepEqual(
      gw.logs.filter((l) => l.level === undefined),
      [],
    );
  });
});
