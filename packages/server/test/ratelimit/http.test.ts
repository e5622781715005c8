import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { Store } from 'floodgate';
import { domainsOf, postJson, rl, run, type Running } from './support.js';

const CONFIG = [
  'domain: api',
  'descriptors:',
  '  - key: user',
  '    rate_limit: { unit: minute, requests_per_unit: 3, name: per-user }',
  '  - key: route',
  '    rate_limit: { unit: second, requests_per_unit: 10, algorithm: token-bucket }',
  '',
].join('\n');

describe('JSON API', () => {
  let r: Running;
  let port: number;
  before(async () => {
    r = await run(domainsOf(CONFIG));
    port = r.servers.httpPort!;
  });
  after(() => r.close());

  it("POST /json answers like Envoy's service: a RateLimitResponse in proto3 JSON, 200 then 429", async () => {
    const body = rl('api', [[['user', 'a']]]);
    const first = await postJson(port, '/json', body);
    assert.equal(first.status, 200);
    assert.deepEqual(first.json, {
      overallCode: 'OK',
      statuses: [
        {
          code: 'OK',
          currentLimit: { requestsPerUnit: 3, unit: 'MINUTE', name: 'per-user' },
          limitRemaining: 2,
          durationUntilReset: '60s',
        },
      ],
      responseHeadersToAdd: [
        { key: 'ratelimit-policy', value: '"per-user";q=3;w=60' },
        { key: 'ratelimit', value: '"per-user";r=2;t=60' },
      ],
    });
    await postJson(port, '/json', body);
    await postJson(port, '/json', body);
    r.clock.advance(500);
    const over = await postJson(port, '/json', body);
    assert.equal(over.status, 429);
    assert.equal(over.json.overallCode, 'OVER_LIMIT');
    assert.deepEqual(over.json.statuses, [
      {
        code: 'OVER_LIMIT',
        currentLimit: { requestsPerUnit: 3, unit: 'MINUTE', name: 'per-user' },
        durationUntilReset: '59.500s',
      },
    ]);
  });

  it('POST /json takes proto3 JSON names too (hitsAddend, requestsPerUnit)', async () => {
    const res = await postJson(port, '/json', {
      domain: 'api',
      hitsAddend: 4,
      descriptors: [
        { entries: [{ key: 'route', value: '/x' }] },
        { entries: [{ key: 'other', value: 'o' }], limit: { requestsPerUnit: 9, unit: 'DAY' } },
      ],
    });
    assert.equal(res.status, 200);
    const statuses = res.json.statuses as Array<Record<string, unknown>>;
    assert.equal(statuses[0]!.limitRemaining, 6);
    assert.deepEqual(statuses[1]!.currentLimit, { requestsPerUnit: 9, unit: 'DAY' });
    assert.equal(statuses[1]!.limitRemaining, 5);
  });

  it('POST /v1/decide: decisions per descriptor; peek answers without counting; refund gives back', async () => {
    const body = rl('api', [[['user', 'b']]]);
    const peek = await postJson(port, '/v1/decide', { ...body, mode: 'peek' });
    assert.equal(peek.status, 200);
    assert.equal(peek.json.allowed, true);
    const [d] = peek.json.decisions as Array<Record<string, unknown>>;
    assert.deepEqual(
      { code: d!.code, remaining: d!.remaining, reason: d!.reason },
      { code: 'OK', remaining: 3, reason: 'ok' },
    );
    const spent = await postJson(port, '/v1/decide', { ...body, hits_addend: 3 });
    assert.equal((spent.json.decisions as Array<Record<string, unknown>>)[0]!.remaining, 0);
    assert.deepEqual(spent.json.headers, {
      'ratelimit-policy': '"per-user";q=3;w=60',
      ratelimit: '"per-user";r=0;t=60',
    });
    const refused = await postJson(port, '/v1/decide', body);
    assert.equal(refused.status, 200);
    assert.equal(refused.json.allowed, false);
    const stillOver = await postJson(port, '/v1/decide', { ...body, mode: 'peek' });
    assert.equal(stillOver.json.allowed, false, 'a peek at a spent limit says it would be refused');
    assert.deepEqual((await postJson(port, '/v1/decide', { ...body, mode: 'refund', hits_addend: 2 })).json, {
      refunded: true,
    });
    const after = await postJson(port, '/v1/decide', body);
    assert.equal(after.json.allowed, true);
    assert.equal((after.json.decisions as Array<Record<string, unknown>>)[0]!.remaining, 1);
  });

  it('malformed requests get 400 with a message, never a crash', async () => {
    const cases: Array<[unknown, RegExp]> = [
      ['{not json', /not JSON/],
      [{ descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }, /^domain must be a non-empty string/],
      [{ domain: 'api', descriptors: [] }, /^descriptors must be a non-empty list/],
      [
        { domain: 'api', hits_addend: 1e20, descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] },
        /^hits_addend is 100000000000000000000; at most 4294967295/,
      ],
      [
        { domain: 'api', hits_addend: -1, descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] },
        /^hits_addend must be a whole number/,
      ],
      [
        {
          domain: 'api',
          descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 1, unit: 'FORTNIGHT' } }],
        },
        /limit\.unit is "FORTNIGHT"/,
      ],
      [{ domain: 'api', descriptors: [{ entries: [{ key: 'k', value: 7 }] }] }, /entries\[0\]\.value must be a string/],
      [[1, 2], /must be an object/],
      [null, /must be an object/],
    ];
    for (const [body, pattern] of cases) {
      const res = await postJson(port, '/json', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const error = res.json.error as { code: string; message: string };
      assert.equal(error.code, 'INVALID_REQUEST');
      assert.match(error.message, pattern);
    }
    assert.equal((await postJson(port, '/v1/decide', { ...rl('api', [[['user', 'z']]]), mode: 'maybe' })).status, 400);
  });

  it('413 for a huge body, 404 and 405 for wrong routes, 200 on /healthcheck', async () => {
    assert.equal((await postJson(port, '/json', 'x'.repeat(100_000))).status, 413);
    assert.equal((await postJson(port, '/nope', {})).status, 404);
    const get = await request(`http://127.0.0.1:${port}/json`);
    assert.equal(get.statusCode, 405);
    await get.body.dump();
    const health = await request(`http://127.0.0.1:${port}/healthcheck`);
    assert.equal(health.statusCode, 200);
    assert.equal(await health.body.text(), 'OK');
  });
});

describe('JSON API with a failing store', () => {
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

  it('answers 503 STORE_FAILED with the cause, on /json and /v1/decide, and keeps serving', async () => {
    for (const path of ['/json', '/v1/decide', '/json']) {
      const res = await postJson(r.servers.httpPort!, path, rl('api', [[['user', 'a']]]));
      assert.equal(res.status, 503);
      const error = res.json.error as { code: string; message: string };
      assert.equal(error.code, 'STORE_FAILED');
      assert.match(error.message, /backend down/);
    }
  });
});
