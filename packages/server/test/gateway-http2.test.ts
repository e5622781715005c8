/**
 * HTTP/2 and HTTP/1.1 on one TLS port of `floodgate serve`, with a gateway process, a real
 * upstream and node's own clients (`http2.connect`, `https.request`): both reach the upstream
 * over HTTP/1.1 with the same forwarding fields, count against the same limit, and get the same
 * answers (429, 413, 400); a client that resets its stream is counted as one that left; upgrades
 * work on HTTP/1.1 only.
 */
import assert from 'node:assert/strict';
import type { ClientHttp2Session } from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { CertDir, h2request, h2session, httpsGet, opensslMissing, type TestCert } from './support/tls.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

/** The gateway's answer to an HTTP/1.1 upgrade over TLS: its status line, then what the tunnel echoed. */
function upgradeOverTls(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: [ca], ALPNProtocols: ['http/1.1'] }, () =>
      socket.write('GET /ws HTTP/1.1\r\nhost: gw\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n'),
    );
    let seen = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      if (seen === '') socket.write('ping');
      seen += c;
      if (seen.endsWith('ping')) {
        socket.destroy();
        resolve(seen);
      }
    });
    socket.on('error', reject);
  });
}

describe('HTTP/2 and HTTP/1.1 on one TLS port (a gateway process, a real upstream)', { skip: opensslMissing() }, () => {
  let certs: CertDir;
  let cert: TestCert;
  let upstream: TestUpstream;
  let gw: GatewayProcess;
  let session: ClientHttp2Session;

  before(async () => {
    certs = new CertDir();
    cert = certs.make('gateway');
    upstream = await startUpstream();
    gw = await startGateway(`
listen:
  tls: { certFile: ${cert.certFile}, keyFile: ${cert.keyFile} }
limits: { maxBodyBytes: 100000, maxHeaderBytes: 4096 }
routes:
  - name: limited
    match: { path: /limited/* }
    upstream: ${upstream.origin}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 4, refillPerSecond: 0.001 }
        key: { type: ip }
  - name: api
    upstream: ${upstream.origin}
`);
    session = await h2session(gw.port, [cert.cert]);
  });

  after(async () => {
    session?.close();
    upstream?.release();
    await gw?.stop();
    await upstream?.close();
    certs?.remove();
  });

  test('the listener says what it speaks, and ALPN chooses h2 for an HTTP/2 client and HTTP/1.1 for the other', async () => {
    assert.equal(gw.logs.find((l) => l.msg === 'listening')?.protocols, 'h2+https');
    assert.equal(session.alpnProtocol, 'h2');
    const h1 = await httpsGet(gw.port, '/a', { ca: [cert.cert] });
    assert.deepEqual([h1.status, h1.alpn], [200, 'http/1.1']);
  });

  test('an HTTP/2 request reaches the upstream over HTTP/1.1: :authority as Host, proto https, no pseudo-header or connection field', async () => {
    const answer = await h2request(session, { ':path': '/api/items?x=1', 'x-client': 'h2' });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-upstream-hop'], undefined, "the upstream's hop-by-hop field is dropped");
    assert.equal(answer.headers['keep-alive'], undefined);
    const seen = upstream.received.at(-1)!;
    assert.equal(seen.url, '/api/items?x=1');
    assert.equal(seen.headers['x-client'], 'h2');
    assert.equal(seen.headers['x-forwarded-host'], `127.0.0.1:${gw.port}`);
    assert.equal(seen.headers['x-forwarded-proto'], 'https');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen.headers.forwarded, `for=127.0.0.1;host="127.0.0.1:${gw.port}";proto=https`);
    assert.deepEqual(
      Object.keys(seen.headers).filter((n) => n.startsWith(':')),
      [],
    );
    const h1 = await httpsGet(gw.port, '/api/items', { ca: [cert.cert] });
    assert.equal(h1.status, 200);
    assert.equal(upstream.received.at(-1)!.headers['x-forwarded-proto'], 'https');
  });

  test('a Host field that names another authority than :authority is malformed: 400, never forwarded', async () => {
    const before = upstream.received.length;
    const answer = await h2request(session, {
      ':path': '/api/x',
      ':authority': `127.0.0.1:${gw.port}`,
      host: 'elsewhere.example',
    });
    assert.equal(answer.status, 400);
    assert.match(answer.body, /:authority/);
    assert.equal(upstream.received.length, before);
  });

  test('HTTP/2 and HTTP/1.1 requests count against the same limit of the same client address, 429 over both', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await h2request(session, { ':path': '/limited/a' })).status);
      statuses.push((await httpsGet(gw.port, '/limited/a', { ca: [cert.cert] })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
    const refused = await h2request(session, { ':path': '/limited/a' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    assert.match(String(refused.headers['retry-after']), /^\d+$/);
    assert.equal(JSON.parse(refused.body).status, 429);
  });

  test('a body over maxBodyBytes gets 413 over HTTP/2, declared or streamed, and the session goes on', async () => {
    const declared = await h2request(
      session,
      { ':path': '/api/upload', ':method': 'POST', 'content-length': '200000' },
      Buffer.alloc(200_000),
    );
    assert.equal(declared.status, 413);
    const streamed = await h2request(session, { ':path': '/api/upload', ':method': 'POST' }, Buffer.alloc(200_000));
    assert.equal(streamed.status, 413);
    assert.equal(JSON.parse(streamed.body).status, 413);
    const small = await h2request(session, { ':path': '/api/upload', ':method': 'POST' }, Buffer.alloc(5_000, 1));
    assert.equal(small.status, 200);
    assert.equal(upstream.received.at(-1)!.bodyBytes, 5_000);
  });

  test('a client that resets its stream while the upstream works is counted as 499, the session unharmed', async () => {
    const held = upstream.received.length;
    const stream = session.request({ ':path': '/hold' });
    stream.on('error', () => {});
    stream.end();
    for (let i = 0; i < 200 && upstream.received.length === held; i++) await new Promise((r) => setTimeout(r, 10));
    stream.close();
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = (await call(gw.adminUrl('/metrics'))).body;
      if (metricValue(text, 'floodgate_responses_total', { route: 'api', status: '499' }) > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(metricValue(text, 'floodgate_responses_total', { route: 'api', status: '499' }), 1);
    assert.equal(metricValue(text, 'floodgate_responses_total', { route: 'api', status: '502' }), 0);
    assert.equal((await h2request(session, { ':path': '/api/after' })).status, 200);
  });

  test("HTTP/1.1's limits hold on the shared TLS port: headers over maxHeaderBytes get 431", async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect(
        { host: '127.0.0.1', port: gw.port, ca: [cert.cert], ALPNProtocols: ['http/1.1'] },
        () => socket.write(`GET /api/a HTTP/1.1\r\nhost: gw\r\nx-big: ${'a'.repeat(6000)}\r\n\r\n`),
      );
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 431 /);
  });

  test('upgrades: a WebSocket handshake over HTTP/1.1 on the TLS port is tunnelled; CONNECT over HTTP/2 is refused with 405', async () => {
    const tunnel = await upgradeOverTls(gw.port, cert.cert);
    assert.match(tunnel, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.ok(tunnel.endsWith('ping'), 'the upstream echoed through the tunnel');
    const before = upstream.received.length;
    const connectAnswer = await h2request(session, { ':method': 'CONNECT', ':authority': '127.0.0.1:1' });
    assert.equal(connectAnswer.status, 405);
    assert.equal(upstream.received.length, before);
  });
});
