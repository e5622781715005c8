import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { signHs256 } from '../src/gateway/jwt.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue, type Reply } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const SECRET = 'jwt-secret-for-the-identity-tests-0123';
const NOW_S = Math.floor(Date.now() / 1000);

function rule(name: string, key: string): string {
  return `
  - name: ${name}
    match: { path: /${name}/* }
    upstream: UPSTREAM
    rules:
      - name: two
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.000001 }
        key: ${key}`;
}

const CONFIG = `
admin: { token: admin-token-for-identity-tests-0123 }
routes:${[
  rule('header-refuse', '{ type: header, name: x-api-key, onAbsent: refuse }'),
  rule('header-default', '{ type: header, name: x-api-key }'),
  rule('header-skip', '{ type: header, name: x-api-key, onAbsent: skip }'),
  rule('jwt-default', '{ type: jwt, claim: sub, secretEnv: FG_ID_SECRET }'),
  rule('jwt-refuse', '{ type: jwt, claim: sub, secretEnv: FG_ID_SECRET, onAbsent: refuse }'),
  rule('jwt-fallback', '{ type: jwt, claim: sub, secretEnv: FG_ID_SECRET, onInvalid: fallback }'),
  rule('jwt-skip', '{ type: jwt, claim: sub, secretEnv: FG_ID_SECRET, onAbsent: skip, onInvalid: skip }'),
  rule('jwt-unverified', '{ type: jwt, claim: sub, header: x-user-token, verify: false }'),
  rule('query-default', '{ type: query, name: tenant }'),
  rule('query-refuse', '{ type: query, name: tenant, onAbsent: refuse }'),
  rule('param', '{ type: param, name: id }').replace('/param/*', '/param/:id'),
  rule('ws-refuse', '{ type: header, name: x-api-key, onAbsent: refuse }'),
  rule('ws-default', '{ type: header, name: x-api-key }'),
  rule('queue-refuse', '{ type: ip }'),
].join('')}
      - name: line
        mode: queue
        policy: { algorithm: tokenBucket, capacity: 10, refillPerSecond: 10 }
        key: { type: header, name: x-api-key, onAbsent: refuse }
        queue: { maxWaitMs: 1000, maxQueue: 10 }
`;

const part = (json: unknown): string => Buffer.from(JSON.stringify(json)).toString('base64url');
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** Every token the gateway must refuse, by what is wrong with it. */
const BAD_TOKENS: Record<string, string> = {
  'alg none': `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: 'alice' })}.`,
  'bad signature': signHs256({ sub: 'alice' }, 'another-secret-entirely-0000'),
  expired: signHs256({ sub: 'alice', exp: NOW_S - 60 }, SECRET),
  'not yet valid': signHs256({ sub: 'alice', nbf: NOW_S + 3600 }, SECRET),
  'no sub claim': signHs256({ uid: 'alice' }, SECRET),
  malformed: 'not-a-jwt',
  'other algorithm': `${part({ alg: 'HS512' })}.${part({ sub: 'alice' })}.c2ln`,
};

/** Header values that are no identity: missing, empty and blank. */
const ABSENT_KEYS: readonly (Record<string, string> | undefined)[] = [
  undefined,
  { 'x-api-key': '' },
  { 'x-api-key': '   ' },
];

function problemOf(reply: Reply): { status: number; detail: string; rule: string } {
  assert.equal(reply.headers['content-type'], 'application/problem+json');
  return JSON.parse(reply.body) as { status: number; detail: string; rule: string };
}

/** Sends a WebSocket upgrade to `path` with `headers` and resolves with the answer's head; the socket is closed. */
function upgrade(port: number, path: string, headers = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: gw\r\nconnection: Upgrade\r\nupgrade: websocket\r\n${headers}sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n`,
      ),
    );
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no upgrade answer: ${text}`)), 5_000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(text.slice(0, end));
    });
    socket.on('error', reject);
  });
}

describe('identities absent or invalid, end to end (a gateway process, a real upstream and client)', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;
  const reached = (prefix: string): number => upstream.received.filter((r) => r.url.startsWith(prefix)).length;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(CONFIG.replaceAll('UPSTREAM', upstream.origin), { env: { FG_ID_SECRET: SECRET } });
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    await upstream?.close();
  });

  it('header, onAbsent refuse: a missing, empty or blank key is answered 401 with a challenge, and forwarded nowhere', async () => {
    for (const headers of ABSENT_KEYS) {
      const reply = await call(gw.url('/header-refuse/x'), headers === undefined ? {} : { headers });
      assert.equal(reply.status, 401, JSON.stringify(headers));
      assert.equal(reply.headers['www-authenticate'], 'ApiKey realm="floodgate", header="x-api-key"');
      const problem = problemOf(reply);
      assert.equal(problem.rule, 'two');
      assert.match(problem.detail, /counts requests by its x-api-key header, which this request lacks/);
    }
    assert.equal(reached('/header-refuse'), 0);
    assert.equal((await call(gw.url('/header-refuse/x'), { headers: { 'x-api-key': 'k1' } })).status, 200);
  });

  it('header, by default: dropping the key does not escape the limit, it counts against the client address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++)
      statuses.push((await call(gw.url('/header-default/x'), { headers: ABSENT_KEYS[i % 3] ?? {} })).status);
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429, 429, 429, 429]);
    assert.equal(reached('/header-default'), 2, 'exactly the limit reached the upstream');
    assert.equal(
      (await call(gw.url('/header-default/x'), { headers: { 'x-api-key': 'k1' } })).status,
      200,
      'a key has its own budget',
    );
  });

  it('header, onAbsent skip: the rule does not apply, and each skip is counted in the metrics', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await call(gw.url('/header-skip/x'))).status, 200);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    const skipped = { route: 'header-skip', rule: 'two', outcome: 'identity_skipped' };
    assert.equal(metricValue(metrics, 'floodgate_decisions_total', skipped), 4);
  });

  it('JWT, by default: every invalid token is refused with 401 invalid_token; an absent one counts against the address', async () => {
    for (const [what, token] of Object.entries(BAD_TOKENS)) {
      const reply = await call(gw.url('/jwt-default/x'), { headers: bearer(token) });
      assert.equal(reply.status, 401, what);
      assert.match(String(reply.headers['www-authenticate']), /^Bearer realm="floodgate", error="invalid_token"/, what);
      assert.match(problemOf(reply).detail, /the sub claim of its bearer token: this request's token/, what);
    }
    assert.equal(reached('/jwt-default'), 0, 'no invalid token reached the upstream');
    const absent = [undefined, { authorization: '' }, { authorization: 'Bearer ' }, { authorization: 'Basic dTpw' }];
    const statuses = [];
    for (const headers of absent)
      statuses.push((await call(gw.url('/jwt-default/x'), headers === undefined ? {} : { headers })).status);
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    const alice = await call(gw.url('/jwt-default/x'), {
      headers: bearer(signHs256({ sub: 'alice', exp: NOW_S + 600 }, SECRET)),
    });
    assert.equal(alice.status, 200, 'a valid token has its own budget');
  });

  it('JWT, onAbsent refuse: no token is 401 with a bare Bearer challenge', async () => {
    const reply = await call(gw.url('/jwt-refuse/x'));
    assert.equal(reply.status, 401);
    assert.equal(reply.headers['www-authenticate'], 'Bearer realm="floodgate"');
    assert.equal(reached('/jwt-refuse'), 0);
  });

  it('JWT, onInvalid fallback: invalid tokens count against the client address, so rotating them gains nothing', async () => {
    const statuses = [];
    for (const token of Object.values(BAD_TOKENS))
      statuses.push((await call(gw.url('/jwt-fallback/x'), { headers: bearer(token) })).status);
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429, 429]);
  });

  it('JWT, onInvalid and onAbsent skip: the rule does not apply, counted as skipped', async () => {
    for (const token of Object.values(BAD_TOKENS))
      assert.equal((await call(gw.url('/jwt-skip/x'), { headers: bearer(token) })).status, 200);
    assert.equal((await call(gw.url('/jwt-skip/x'))).status, 200);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    const skipped = { route: 'jwt-skip', rule: 'two', outcome: 'identity_skipped' };
    assert.equal(metricValue(metrics, 'floodgate_decisions_total', skipped), Object.keys(BAD_TOKENS).length + 1);
  });

  it('JWT unverified (no secret): alg none is still refused; a readable token counts as its claim', async () => {
    const none = await call(gw.url('/jwt-unverified/x'), { headers: { 'x-user-token': BAD_TOKENS['alg none']! } });
    assert.equal(none.status, 401);
    const read = `${part({ alg: 'RS256' })}.${part({ sub: 'bob' })}.c2ln`;
    for (let i = 0; i < 2; i++)
      assert.equal((await call(gw.url('/jwt-unverified/x'), { headers: { 'x-user-token': read } })).status, 200);
    assert.equal((await call(gw.url('/jwt-unverified/x'), { headers: { 'x-user-token': read } })).status, 429);
  });

  it('query parameter: absent counts against the address by default, refused when set so; given twice with different values, 400', async () => {
    const statuses = [];
    for (const q of ['', '?tenant=', '?tenant=%20', '?other=1'])
      statuses.push((await call(gw.url(`/query-default/x${q}`))).status);
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    const twice = await call(gw.url('/query-default/x?tenant=a&tenant=b'));
    assert.equal(twice.status, 400);
    assert.match(problemOf(twice).detail, /more than once with different values/);
    assert.equal(
      (await call(gw.url('/query-default/x?tenant=a&tenant=a'))).status,
      200,
      'the same value twice is one identity',
    );
    const refused = await call(gw.url('/query-refuse/x'));
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['www-authenticate'], 'ApiKey realm="floodgate", query="tenant"');
  });

  it('route parameter: never absent, since its pattern needs the segment (an empty one matches no route)', async () => {
    assert.equal((await call(gw.url('/param/a'))).status, 200);
    assert.equal((await call(gw.url('/param/'))).status, 404);
  });

  it('WebSocket upgrades: without a key, refused with 401 or counted against the address, like requests', async () => {
    assert.match(
      await upgrade(gw.port, '/ws-refuse/x'),
      /^HTTP\/1\.1 401[^]*www-authenticate: ApiKey realm="floodgate", header="x-api-key"/i,
    );
    assert.match(await upgrade(gw.port, '/ws-refuse/x', 'x-api-key: k1\r\n'), /^HTTP\/1\.1 101/);
    const heads = [];
    for (let i = 0; i < 3; i++) heads.push(await upgrade(gw.port, '/ws-default/x', i === 1 ? 'x-api-key: \r\n' : ''));
    assert.deepEqual(
      heads.map((h) => h.slice(9, 12)),
      ['101', '101', '429'],
    );
  });

  it('WebSocket upgrades: matched and forwarded in normal form; an ambiguous path refused with 400', async () => {
    const head = await upgrade(gw.port, '/ws-default/./y//%7Ez', 'x-api-key: k-path\r\n');
    assert.match(head, /^HTTP\/1\.1 101/);
    assert.ok(
      upstream.received.some((r) => r.url === '/ws-default/y/~z'),
      'the upstream was asked to upgrade the normal form',
    );
    assert.match(await upgrade(gw.port, '/ws-default/a%2Fb', 'x-api-key: k-path\r\n'), /^HTTP\/1\.1 400/);
    assert.ok(!upstream.received.some((r) => r.url.includes('%2F')));
  });

  it('a queued rule refusing for identity answers 401 before any rule is charged or waited for', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await call(gw.url('/queue-refuse/x'))).status, 401);
    const keyed = { headers: { 'x-api-key': 'k1' } };
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(gw.url('/queue-refuse/x'), keyed)).status);
    assert.deepEqual(statuses, [200, 200, 429], 'the refused requests spent none of the per-address limit');
    assert.equal(reached('/queue-refuse'), 2);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    const count = (outcome: string): number =>
      metricValue(metrics, 'floodgate_decisions_total', { route: 'queue-refuse', rule: 'two', outcome });
    assert.equal(count('admitted') + count('near_limit'), 2, 'the per-address rule decided the keyed requests only');
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', {
        route: 'queue-refuse',
        rule: 'line',
        outcome: 'identity_refused',
      }),
      3,
    );
  });

  it('counts identity refusals in the metrics, by route and rule', async () => {
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    const refused = (route: string): number =>
      metricValue(metrics, 'floodgate_decisions_total', { route, rule: 'two', outcome: 'identity_refused' });
    assert.equal(refused('header-refuse'), ABSENT_KEYS.length);
    assert.equal(refused('jwt-default'), Object.keys(BAD_TOKENS).length);
    assert.equal(refused('ws-refuse'), 1);
  });
});
