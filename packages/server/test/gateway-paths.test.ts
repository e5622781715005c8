import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startExpress, type ExpressUpstream } from './support/express-upstream.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';

/** Reply is the status line's code and the body of one raw exchange. */
interface Reply {
  readonly status: number;
  readonly body: string;
}

/**
 * Sends `POST <target>` byte for byte (no client library rewrites the target) and reads the whole
 * answer, the connection closing after it.
 */
export function rawPost(port: number, target: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    let head = `POST ${target} HTTP/1.1\r\nhost: ${headers.host ?? 'gw.test'}\r\ncontent-length: 0\r\nconnection: close\r\n`;
    for (const [name, value] of Object.entries(headers)) if (name !== 'host') head += `${name}: ${value}\r\n`;
    const socket = connect(port, '127.0.0.1', () => socket.write(head + '\r\n'));
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no answer to ${target}: ${got}`)), 5_000);
    socket.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0);
      const at = got.indexOf('\r\n\r\n');
      resolve({ status, body: at < 0 ? '' : dechunk(got.slice(at + 4), got.slice(0, at)) });
    });
  });
}

function dechunk(body: string, head: string): string {
  if (!/transfer-encoding: chunked/i.test(head)) return body;
  let out = '';
  let rest = body;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, nl), 16);
    if (!(size > 0)) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

/** Every spelling from the issue, with what the gateway must make of it under the default stance (reject). */
const COUNTED: readonly string[] = [
  '/api/login/',
  '/API/login',
  '/api/Login',
  '//api/login',
  '/api//login',
  '/./api/login',
  '/api/./login',
  '/api/%6cogin',
  '/api/%6Cogin',
  '/%61pi/login',
  '/api/x/../login',
  '/api/%2e%2e/api/login',
];
const REFUSED: readonly string[] = [
  '/api/login;x=1',
  '/api;x=1/login',
  '/api%2flogin',
  '/api%2Flogin',
  '/../api/login',
  '/api/../../api/login',
  '/api\\login',
  '/api%5clogin',
  '/api/login%00',
  '/api/login%zz',
  '/api/login#x',
  '/api%c0%aflogin',
];

const LIMIT = 3;

function configFor(upstream: string): string {
  return `
routes:
  - name: login
    match: { host: gw.test, path: /api/login }
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: ${LIMIT}, refillPerSecond: 0.000001 }
        key: { type: header, name: x-client }
  - name: login-lenient
    match: { host: lenient.test, path: /api/login, ambiguous: normalise }
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: ${LIMIT}, refillPerSecond: 0.000001 }
        key: { type: header, name: x-client }
  - name: open
    upstream: ${upstream}
`;
}

describe('route matching on normal paths, end to end (floodgate serve before a default Express application)', () => {
  let express: ExpressUpstream;
  let gw: GatewayProcess;

  before(async () => {
    express = await startExpress();
    gw = await startGateway(configFor(express.origin));
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    await express?.close();
  });

  it('counts every spelling Express routes to its login handler against /api/login, forwarding the normal form', async () => {
    for (const [i, spelling] of COUNTED.entries()) {
      const client = { 'x-client': `counted-${i}` };
      for (let n = 0; n < LIMIT - 1; n++) assert.equal((await rawPost(gw.port, '/api/login', client)).status, 200);
      const before = express.logins();
      const reply = await rawPost(gw.port, `${spelling}?next=%2Fhome&a=1`, client);
      assert.equal(reply.status, 200, `${spelling}: ${reply.body}`);
      const body = JSON.parse(reply.body) as { handler: string; url: string };
      assert.equal(body.handler, 'login', spelling);
      assert.match(body.url, /^\/api\/login\/?\?next=%2Fhome&a=1$/i, `${spelling}: the normal form, query kept`);
      assert.equal(express.logins(), before + 1);
      // The spelling was counted: the limit is spent, for it and for the plain path alike.
      assert.equal((await rawPost(gw.port, '/api/login', client)).status, 429, `${spelling} was counted`);
      assert.equal((await rawPost(gw.port, spelling, client)).status, 429, `${spelling} is refused once spent`);
      assert.equal(express.logins(), before + 1, 'a refused spelling never reaches the login handler');
    }
  });

  it('refuses each ambiguous spelling with 400 problem+json under the default stance, forwarding nothing', async () => {
    const before = express.seen.length;
    for (const spelling of REFUSED) {
      const reply = await rawPost(gw.port, spelling, { 'x-client': 'refused' });
      assert.equal(reply.status, 400, `${spelling}: ${reply.body}`);
      const problem = JSON.parse(reply.body) as { status: number; detail: string };
      assert.equal(problem.status, 400);
      assert.match(problem.detail, /the request path is ambiguous \(.+\(\w+\)\)/, spelling);
    }
    assert.equal(express.seen.length, before, 'no ambiguous spelling reached the upstream');
  });

  it('under a route stance of normalise, counts each ambiguous spelling against its normal form and forwards only that', async () => {
    const lenient = { host: 'lenient.test' };
    const expected: Record<string, RegExp> = {
      '/api/login;x=1': /^\/api\/login$/,
      '/api;x=1/login': /^\/api\/login$/,
      '/api%2flogin': /^\/api\/login$/,
      '/api%2Flogin': /^\/api\/login$/,
      '/../api/login': /^\/api\/login$/,
      '/api/../../api/login': /^\/api\/login$/,
      '/api\\login': /^\/api\/login$/,
      '/api%5clogin': /^\/api\/login$/,
      '/api/login#x': /^\/api\/login$/,
    };
    for (const [i, [spelling, forwarded]] of Object.entries(expected).entries()) {
      const client = { ...lenient, 'x-client': `lenient-${i}` };
      for (let n = 0; n < LIMIT - 1; n++) assert.equal((await rawPost(gw.port, '/api/login', client)).status, 200);
      const reply = await rawPost(gw.port, spelling, client);
      assert.equal(reply.status, 200, `${spelling}: ${reply.body}`);
      assert.match((JSON.parse(reply.body) as { url: string }).url, forwarded, spelling);
      assert.equal((await rawPost(gw.port, '/api/login', client)).status, 429, `${spelling} was counted`);
    }
    // /api/login%00 is another path: the catch-all route takes it, under the gateway-wide stance (reject).
    const nul = await rawPost(gw.port, '/api/login%00', { ...lenient, 'x-client': 'lenient-nul' });
    assert.equal(nul.status, 400);
  });

  it('sends a path no route matches in normal form to the catch-all route, as Express would read it', async () => {
    const reply = await rawPost(gw.port, '/other/./x//y/%7Ez');
    assert.equal(reply.status, 404, 'the Express catch-all answered');
    assert.equal((JSON.parse(reply.body) as { url: string }).url, '/other/x/y/~z');
  });
});

describe('a route stating its upstream is case-sensitive and strict about the trailing slash, end to end', () => {
  let express: ExpressUpstream;
  let gw: GatewayProcess;

  before(async () => {
    express = await startExpress({ caseSensitive: true, strict: true });
    gw = await startGateway(`
routes:
  - name: login
    match: { path: /api/login, caseSensitive: true, strictTrailingSlash: true }
    upstream: ${express.origin}
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 1, refillPerSecond: 0.000001 }
        key: { type: header, name: x-client }
  - name: open
    upstream: ${express.origin}
`);
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    await express?.close();
  });

  it('counts only what that upstream routes to its login handler, and that upstream runs the handler for nothing else', async () => {
    const client = { 'x-client': 'strict' };
    assert.equal((await rawPost(gw.port, '/api/login', client)).status, 200);
    assert.equal((await rawPost(gw.port, '//api/./%6cogin', client)).status, 429, 'still the same path, counted');
    for (const other of ['/API/login', '/api/Login', '/api/login/']) {
      const reply = await rawPost(gw.port, other, client);
      assert.equal(reply.status, 404, `${other}: not the login route here, nor there`);
      assert.equal((JSON.parse(reply.body) as { handler: string }).handler, 'other');
    }
    assert.equal(express.logins(), 1);
  });
});
