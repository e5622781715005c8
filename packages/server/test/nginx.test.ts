/**
 * nginx in front of floodgate, end to end: Debian's nginx runs examples/nginx/nginx.conf (ports
 * changed, nothing else), asking a real decision service process (`floodgate ratelimit` on
 * examples/nginx/ratelimit.yaml) about each request with auth_request, in front of a real upstream
 * that records what reaches it. Every count is exact: the limits refill at most once every 36 s,
 * and a refused request is charged nowhere.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { problemBody } from 'floodgate/http';
import { call, type Reply } from './support/http.js';
import { EXAMPLE_DIR, NGINX, NGINX_MISSING, exampleConf, startNginx, type RunningNginx } from './support/nginx.js';
import { closedPort } from './support/ports.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';
import { startServiceProcess, type ServiceProcess } from './ratelimit/processes.js';

/** send sends `count` requests one after another and returns their replies. */
async function send(
  count: number,
  url: (i: number) => string,
  headers: (i: number) => Record<string, string>,
  method = 'GET',
): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < count; i++) replies.push(await call(url(i), { method, headers: headers(i) }));
  return replies;
}

function statuses(replies: readonly Reply[]): number[] {
  return replies.map((r) => r.status);
}

/** assertRefusal checks that a 429 is floodgate's refusal by `policy`, passed on whole. */
function assertRefusal(reply: Reply, policy: string): void {
  assert.equal(reply.status, 429);
  assert.equal(reply.headers['content-type'], 'application/problem+json');
  assert.equal(reply.body, problemBody('quota-exceeded', [policy]), 'the body is floodgate’s problem, byte for byte');
  assert.match(String(reply.headers['retry-after']), /^[1-9]\d*$/);
  assert.equal(reply.headers['cache-control'], 'no-store');
  assert.match(String(reply.headers['ratelimit-policy']), new RegExp(`"${policy}";q=\\d+;w=\\d+`));
  assert.match(String(reply.headers.ratelimit), new RegExp(`"${policy}";r=0;t=[1-9]\\d*`));
}

describe('nginx in front of floodgate (examples/nginx)', { skip: NGINX_MISSING }, () => {
  let upstream: TestUpstream;
  let floodgate: ServiceProcess;
  let nginx: RunningNginx;
  let base: string;
  const reached = (pred: (url: string, key: string | undefined) => boolean): number =>
    upstream.received.filter((r) => pred(r.url, r.headers['x-api-key'] as string | undefined)).length;

  before(async () => {
    upstream = await startUpstream();
    floodgate = await startServiceProcess(['--config', join(EXAMPLE_DIR, 'ratelimit.yaml')]);
    const port = await closedPort();
    nginx = await startNginx(
      exampleConf({ nginx: port, floodgate: floodgate.httpPort, app: upstream.port }, { workerProcesses: 2 }),
      port,
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await nginx?.stop();
    await floodgate?.stop();
    await upstream?.close();
  });

  it('runs an nginx built with the auth_request module (nginx -V)', () => {
    assert.match(spawnSync(NGINX, ['-V'], { encoding: 'utf8' }).stderr, /--with-http_auth_request_module\b/);
  });

  it('admits an API key 100 times, then answers floodgate’s 429 with its headers and body', async () => {
    const replies = await send(
      103,
      (i) => `${base}/api/items/${i}`,
      () => ({ 'x-api-key': 'key-a' }),
    );
    assert.deepEqual(statuses(replies), [...Array<number>(100).fill(200), 429, 429, 429]);
    assert.equal(replies[0]!.headers['ratelimit-policy'], '"per-key";q=100;w=3600');
    assert.match(String(replies[0]!.headers.ratelimit), /^"per-key";r=99;t=\d+$/);
    assert.match(String(replies[99]!.headers.ratelimit), /^"per-key";r=0;t=\d+$/);
    for (const refused of replies.slice(100)) assertRefusal(refused, 'per-key');
    assert.equal(
      reached((url, key) => url.startsWith('/api/items/') && key === 'key-a'),
      100,
    );
  });

  it('counts another key, and clients without one by address, each apart', async () => {
    const other = await call(`${base}/api/items`, { headers: { 'x-api-key': 'key-b' } });
    assert.equal(other.status, 200);
    assert.match(String(other.headers.ratelimit), /^"per-key";r=99;/);
    const anonymous = await send(
      62,
      (i) => `${base}/public/${i}`,
      () => ({}),
    );
    assert.deepEqual(statuses(anonymous), [...Array<number>(60).fill(200), 429, 429]);
    assert.match(String(anonymous[0]!.headers.ratelimit), /^"per-address";r=59;/);
    for (const refused of anonymous.slice(60)) assertRefusal(refused, 'per-address');
    assert.equal(
      reached((url) => url.startsWith('/public/')),
      60,
    );
  });

  it('limits logins per address, however the path is spelled (a trailing slash too) and whatever key is sent', async () => {
    // A trailing slash too: Express serves /api/login/ as /api/login, and the gateway counts it so.
    const spellings = ['/api/login', '//api/login', '/api/%6cogin', '/api/login/', '/api//login//'];
    const replies = await send(
      12,
      (i) => `${base}${spellings[i % spellings.length]}`,
      (i) => ({ 'x-api-key': `login-${i}` }),
      'POST',
    );
    assert.deepEqual(statuses(replies), [...Array<number>(10).fill(200), 429, 429]);
    assert.match(String(replies[0]!.headers.ratelimit), /"login";r=9;/);
    for (const refused of replies.slice(10)) assertRefusal(refused, 'login');
    assert.equal(
      reached((url) => url.includes('login') || url.includes('%6cogin')),
      10,
    );
    // A refused login was charged nowhere: its key has its whole budget.
    const later = await call(`${base}/api/items`, { headers: { 'x-api-key': 'login-10' } });
    assert.match(String(later.headers.ratelimit), /^"per-key";r=99;/);
  });

  it('keys each request by what nginx knows, never by the floodgate headers a client sends', async () => {
    const spoofing = {
      'x-api-key': 'spoofer',
      'floodgate-domain': 'other',
      'floodgate-descriptor-1': 'api_key=victim',
      'floodgate-descriptor-3': 'api_key=victim',
      'floodgate-descriptor-2-2': 'remote_address=10.0.0.1',
      'x-forwarded-for': '10.9.9.9',
    };
    const replies = await send(
      2,
      () => `${base}/api/items`,
      () => spoofing,
    );
    assert.deepEqual(statuses(replies), [200, 200]);
    assert.match(String(replies[1]!.headers.ratelimit), /^"per-key";r=98;/);
    const victim = await call(`${base}/api/items`, { headers: { 'x-api-key': 'victim' } });
    assert.match(String(victim.headers.ratelimit), /^"per-key";r=99;/);
    // An API key full of quotes, commas and `=` is one key, counted as sent.
    const odd = 'k"1, api_key=victim; =x';
    const first = await call(`${base}/api/items`, { headers: { 'x-api-key': odd } });
    assert.match(String(first.headers.ratelimit), /^"per-key";r=99;/);
    const second = await call(`${base}/api/items`, { headers: { 'x-api-key': odd } });
    assert.match(String(second.headers.ratelimit), /^"per-key";r=98;/);
  });

  it('answers floodgate’s 400 to a key over 1,024 characters, and forwards nothing', async () => {
    const before = upstream.received.length;
    const reply = await call(`${base}/api/items`, { headers: { 'x-api-key': 'k'.repeat(2000) } });
    assert.equal(reply.status, 400);
    assert.equal(reply.headers['content-type'], 'application/problem+json');
    assert.equal((JSON.parse(reply.body) as { status: number }).status, 400);
    assert.equal(upstream.received.length, before);
  });

  it('forwarded exactly the requests it admitted', () => {
    // 100 + 1 + 60 + 10 + 1 + 2 + 1 + 2 admitted above.
    assert.equal(upstream.received.length, 177);
  });
});
