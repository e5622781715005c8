/**
 * Request targets and identities at their edges, against a gateway process and a real upstream,
 * over raw sockets (a client library would normalise what is tested here):
 * - a target in absolute form is served as its origin form, its authority the Host (RFC 9112
 *   section 3.2.2: a server must accept it, and ignore the Host field then);
 * - a key header sent in two field lines with different values is refused 400, as a repeated
 *   query parameter is: node joins them (`k1, rN`), and each join would be a fresh key;
 * - a trusted proxy's X-Forwarded-For that names no address puts the request on `ip:unknown`,
 *   never on the proxy's own address (which a client could then borrow), and says so once.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

/** rawRequest sends `lines` (with `Connection: close`) on a new connection and resolves to the status and the whole answer once the gateway closes it. */
function rawRequest(port: number, lines: readonly string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${lines.join('\r\n')}\r\n\r\n`));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no whole answer within 5 s: ${text}`));
    }, 5000);
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('end', () => {
      clearTimeout(timer);
      resolve({ status: Number(text.slice(9, 12)), text });
    });
    socket.on('error', reject);
  });
}

describe('an X-Forwarded-For from a trusted proxy that names no address', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(`
trustProxy: ["127.0.0.1"]
routes:
  - name: api
    upstream: ${upstream.origin}
    rules:
      - name: per-ip
        policy: { algorithm: fixedWindow, limit: 2, windowMs: 60000 }
`);
    await gw.waitForLog('ready');
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('counts it on ip:unknown (not the proxy address), and warns once naming the fix', async () => {
    const statuses = [];
    for (const xff of ['garbage-1', 'unknown', 'garbage-2', '198.51.100.7', '198.51.100.7'])
      statuses.push(
        (await rawRequest(gw.port, ['GET /x HTTP/1.1', 'Host: a', `X-Forwarded-For: ${xff}`, 'Connection: close']))
          .status,
      );
    assert.deepEqual(
      statuses,
      [200, 200, 429, 200, 200],
      'the unparsed share one key of their own; a client has its own',
    );
    const proxy = await rawRequest(gw.port, ['GET /x HTTP/1.1', 'Host: a', 'Connection: close']);
    assert.equal(proxy.status, 200, "the proxy's own address was never charged for them");
    const warned = gw.logs.filter((l) =>
      String(l.msg).includes("a trusted proxy's x-forwarded-for names no client address"),
    );
    assert.equal(warned.length, 1);
    assert.match(String(warned[0]!.msg), /\$proxy_add_x_forwarded_for/);
  });
});

describe('request targets and identities at their edges', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(`
routes:
  - name: keyed
    match: { path: /keyed/* }
    upstream: ${upstream.origin}
    rules:
      - name: per-key
        policy: { algorithm: fixedWindow, limit: 3, windowMs: 60000 }
        key: { type: header, name: x-api-key }
  - name: hosted
    match: { host: api.example.test, path: /api/* }
    upstream: ${upstream.origin}
`);
    await gw.waitForLog('ready');
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('serves an absolute-form target as its origin form, routed by its authority, not the Host field', async () => {
    const answer = await rawRequest(gw.port, [
      'GET http://api.example.test/api/items?x=1 HTTP/1.1',
      'Host: ignored.example.test',
      'Connection: close',
    ]);
    // Matched by the authority's host (the route names it), not the Host field's.
    assert.equal(answer.status, 200, answer.text);
    assert.equal(upstream.received.at(-1)!.url, '/api/items?x=1');
    const byHost = await rawRequest(gw.port, [
      'GET /api/items HTTP/1.1',
      'Host: ignored.example.test',
      'Connection: close',
    ]);
    assert.equal(byHost.status, 404, 'the Host field alone names no route here');
  });

  it('refuses an absolute-form target with user information, 400', async () => {
    const answer = await rawRequest(gw.port, [
      'GET http://user@api.example.test/api/x HTTP/1.1',
      'Host: a',
      'Connection: close',
    ]);
    assert.equal(answer.status, 400, answer.text);
  });

  it('refuses a key header sent twice with different values, and counts one sent twice alike as that key', async () => {
    const twice = (a: string, b: string): Promise<{ status: number; text: string }> =>
      rawRequest(gw.port, [
        'GET /keyed/x HTTP/1.1',
        'Host: a',
        `X-Api-Key: ${a}`,
        `X-Api-Key: ${b}`,
        'Connection: close',
      ]);
    for (let i = 0; i < 5; i++) {
      const answer = await twice('k1', `r${i}`);
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.text, /gives more than once with different values/);
    }
    const alike = [];
    for (let i = 0; i < 4; i++) alike.push((await twice('k2', 'k2')).status);
    assert.deepEqual(alike, [200, 200, 200, 429], 'one key, counted as itself');
  });
});
