/**
 * The decision service's `/v1/auth` endpoint (what nginx's auth_request asks), without nginx: how
 * the `Floodgate-*` headers are read (a table of header sets and the request or error each makes),
 * and what a real service on a loopback port answers to a real client: 204 admitted, 403 refused
 * with `Floodgate-Status` and `Floodgate-Problem`, 400 for the proxy's mistakes, 503 when its store
 * fails. The service runs on a manual clock, so every count is exact.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Store } from 'floodgate';
import { problemBody } from 'floodgate/http';
import { request } from 'undici';
import { DecisionError } from '../src/ratelimit/index.js';
import { readAuthRequest } from '../src/ratelimit/service/auth-request.js';
import { domainsOf, run, type Running } from './ratelimit/support.js';

const CONFIG = `
domain: edge
descriptors:
  - key: api_key
    rate_limit: { unit: hour, requests_per_unit: 2, name: per-key }
  - key: tenant
    descriptors:
      - key: user
        rate_limit: { unit: hour, requests_per_unit: 1 }
`;

/** headers returns `pairs` as node's `req.headersDistinct` has them. */
function headers(pairs: Record<string, string | string[]>): NodeJS.Dict<string[]> {
  return Object.fromEntries(Object.entries(pairs).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]));
}

describe('readAuthRequest', () => {
  it('reads descriptors and entries in number order, missing numbers left out, values as sent', () => {
    const asked = readAuthRequest(
      headers({
        'floodgate-domain': 'edge',
        'floodgate-descriptor-10': 'path=/a=b, c',
        'floodgate-descriptor-2-3': 'user=u"1',
        'floodgate-descriptor-2': 'tenant=t',
        'x-other': 'ignored',
      }),
    );
    assert.equal(asked.kind, 'decide');
    assert.deepEqual(asked.kind === 'decide' ? asked.request?.descriptors.map((d) => d.entries) : undefined, [
      [
        { key: 'tenant', value: 't' },
        { key: 'user', value: 'u"1' },
      ],
      [{ key: 'path', value: '/a=b, c' }],
    ]);
  });

  it('asks nothing of a request with no descriptor header, and flags a value over 1,024 characters', () => {
    assert.deepEqual(readAuthRequest(headers({ 'floodgate-domain': 'edge' })), { kind: 'decide', request: undefined });
    assert.deepEqual(
      readAuthRequest(headers({ 'floodgate-domain': 'edge', 'floodgate-descriptor-1': `k=${'v'.repeat(1025)}` })),
      { kind: 'invalid-value', header: 'floodgate-descriptor-1' },
    );
    const longest = readAuthRequest(
      headers({ 'floodgate-domain': 'edge', 'floodgate-descriptor-1': `k=${'v'.repeat(1024)}` }),
    );
    assert.equal(longest.kind, 'decide');
  });

  const mistakes: ReadonlyArray<readonly [string, Record<string, string | string[]>, string, RegExp]> = [
    ['no domain', { 'floodgate-descriptor-1': 'k=v' }, 'floodgate-domain', /is required/],
    ['a domain twice', { 'floodgate-domain': ['a', 'b'] }, 'floodgate-domain', /is required, once/],
    ['descriptor 0', { 'floodgate-domain': 'd', 'floodgate-descriptor-0': 'k=v' }, 'floodgate-descriptor-0', /1 to 64/],
    [
      'descriptor 65',
      { 'floodgate-domain': 'd', 'floodgate-descriptor-65': 'k=v' },
      'floodgate-descriptor-65',
      /1 to 64/,
    ],
    [
      'entry 33',
      { 'floodgate-domain': 'd', 'floodgate-descriptor-1-33': 'k=v' },
      'floodgate-descriptor-1-33',
      /1 to 32/,
    ],
    ['a name', { 'floodgate-domain': 'd', 'floodgate-descriptor-x': 'k=v' }, 'floodgate-descriptor-x', /expected/],
    ['no =', { 'floodgate-domain': 'd', 'floodgate-descriptor-1': 'kv' }, 'floodgate-descriptor-1', /<key>=<value>/],
    ['no key', { 'floodgate-domain': 'd', 'floodgate-descriptor-1': '=v' }, 'floodgate-descriptor-1', /<key>=<value>/],
    [
      'sent twice',
      { 'floodgate-domain': 'd', 'floodgate-descriptor-1': ['k=a', 'k=b'] },
      'floodgate-descriptor-1',
      /more than once/,
    ],
    [
      'one entry, two names',
      { 'floodgate-domain': 'd', 'floodgate-descriptor-3': 'k=a', 'floodgate-descriptor-3-1': 'k=b' },
      'floodgate-descriptor-3-1',
      /two names/,
    ],
  ];
  for (const [what, pairs, field, message] of mistakes)
    it(`refuses the proxy’s mistake: ${what}`, () => {
      assert.throws(
        () => readAuthRequest(headers(pairs)),
        (e: unknown) =>
          e instanceof DecisionError && e.code === 'INVALID_REQUEST' && e.field === field && message.test(e.message),
      );
    });
});

interface AuthReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

async function auth(port: number, pairs: Record<string, string>, method = 'GET'): Promise<AuthReply> {
  const res = await request(`http://127.0.0.1:${port}/v1/auth`, { method: method as 'GET', headers: pairs });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

describe('/v1/auth on a running service', () => {
  let r: Running;
  before(async () => {
    r = await run(domainsOf(CONFIG));
  });
  after(() => r.close());

  it('admits with 204 and the RateLimit fields, then refuses with 403, the status to send and the problem', async () => {
    const asking = { 'floodgate-domain': 'edge', 'floodgate-descriptor-1': 'api_key=a' };
    const first = await auth(r.servers.httpPort!, asking);
    assert.equal(first.status, 204);
    assert.equal(first.headers['ratelimit-policy'], '"per-key";q=2;w=3600');
    assert.match(String(first.headers.ratelimit), /^"per-key";r=1;t=\d+$/);
    assert.equal(first.headers['floodgate-status'], undefined);
    assert.equal((await auth(r.servers.httpPort!, asking, 'POST')).status, 204);
    const refused = await auth(r.servers.httpPort!, asking);
    assert.equal(refused.status, 403);
    assert.equal(refused.body, '');
    assert.equal(refused.headers['floodgate-status'], '429');
    assert.equal(refused.headers['floodgate-problem'], problemBody('quota-exceeded', ['per-key']));
    assert.match(String(refused.headers['retry-after']), /^[1-9]\d*$/);
    assert.match(String(refused.headers.ratelimit), /^"per-key";r=0;/);
  });

  it('names each refusing limit in the problem, unnamed ones by their place', async () => {
    const asking = {
      'floodgate-domain': 'edge',
      'floodgate-descriptor-1': 'api_key=b',
      'floodgate-descriptor-2': 'tenant=t',
      'floodgate-descriptor-2-2': 'user=u',
    };
    assert.equal((await auth(r.servers.httpPort!, asking)).status, 204);
    const refused = await auth(r.servers.httpPort!, asking);
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['floodgate-problem'], problemBody('quota-exceeded', ['d1']));
    // Refused, so charged nowhere: api_key=b has one hit left.
    const other = await auth(r.servers.httpPort!, {
      'floodgate-domain': 'edge',
      'floodgate-descriptor-1': 'api_key=b',
    });
    assert.match(String(other.headers.ratelimit), /^"per-key";r=0;/);
    assert.equal(other.status, 204);
  });

  it('answers 204 with nothing to add when no descriptor came, or the domain is not configured', async () => {
    const askings: ReadonlyArray<Record<string, string>> = [
      { 'floodgate-domain': 'edge' },
      { 'floodgate-domain': 'elsewhere', 'floodgate-descriptor-1': 'api_key=a' },
    ];
    for (const asking of askings) {
      const reply = await auth(r.servers.httpPort!, asking);
      assert.equal(reply.status, 204);
      assert.equal(reply.headers.ratelimit, undefined);
    }
  });

  it('answers 403 with Floodgate-Status 400 to a value over 1,024 characters, and 400 to the proxy’s mistakes', async () => {
    const long = await auth(r.servers.httpPort!, {
      'floodgate-domain': 'edge',
      'floodgate-descriptor-1': `api_key=${'k'.repeat(1025)}`,
    });
    assert.equal(long.status, 403);
    assert.equal(long.headers['floodgate-status'], '400');
    assert.equal((JSON.parse(String(long.headers['floodgate-problem'])) as { status: number }).status, 400);
    const mistake = await auth(r.servers.httpPort!, { 'floodgate-descriptor-1': 'api_key=a' });
    assert.equal(mistake.status, 400);
    assert.deepEqual(
      (JSON.parse(mistake.body) as { error: { code: string; field: string } }).error.field,
      'floodgate-domain',
    );
  });
});

describe('/v1/auth with a failing store', () => {
  const failing: Store = {
    bind: () => ({
      synchronous: false,
      consume: () => Promise.reject(new Error('backend down')),
      peek: () => Promise.reject(new Error('backend down')),
      refund: () => Promise.reject(new Error('backend down')),
      reset: () => Promise.reject(new Error('backend down')),
    }),
  };
  let r: Running;
  before(async () => {
    r = await run(domainsOf(CONFIG), failing);
  });
  after(() => r.close());

  it('answers 503, which auth_request turns into the proxy’s failure mode', async () => {
    const reply = await auth(r.servers.httpPort!, {
      'floodgate-domain': 'edge',
      'floodgate-descriptor-1': 'api_key=a',
    });
    assert.equal(reply.status, 503);
    assert.equal((JSON.parse(reply.body) as { error: { code: string } }).error.code, 'STORE_FAILED');
  });
});
