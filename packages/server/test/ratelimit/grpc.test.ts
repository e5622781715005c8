import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { domainsOf, fixtureDomains, rl, run, type Running } from './support.js';

describe('gRPC ShouldRateLimit on envoyproxy/ratelimit example.yaml', () => {
  let r: Running;
  before(async () => {
    r = await run([...fixtureDomains('example.yaml'), ...fixtureDomains('readme-examples.yaml')]);
  });
  after(() => r.close());

  it('answers every field: overall_code, statuses, current_limit, limit_remaining, duration_until_reset, headers', async () => {
    const res = await r.client.call(
      rl('rl', [
        [
          ['source_cluster', 'proxy'],
          ['destination_cluster', 'mock'],
        ],
      ]),
    );
    assert.equal(res.overall_code, 'OK');
    assert.equal(res.statuses.length, 1);
    const s = res.statuses[0]!;
    assert.deepEqual(
      { code: s.code, limit: s.current_limit, remaining: s.limit_remaining },
      { code: 'OK', limit: { requests_per_unit: 1, unit: 'MINUTE', name: '' }, remaining: 0 },
    );
    assert.deepEqual(s.duration_until_reset, { seconds: '60', nanos: 0 });
    const headers = Object.fromEntries(res.response_headers_to_add.map((h) => [h.key, h.value]));
    assert.deepEqual(headers, { 'ratelimit-policy': '"d0";q=1;w=60', ratelimit: '"d0";r=0;t=60' });
    r.clock.advance(15_000);
    const over = await r.client.call(
      rl('rl', [
        [
          ['source_cluster', 'proxy'],
          ['destination_cluster', 'mock'],
        ],
      ]),
    );
    assert.equal(over.overall_code, 'OVER_LIMIT');
    assert.equal(over.statuses[0]!.code, 'OVER_LIMIT');
    assert.deepEqual(over.statuses[0]!.duration_until_reset, { seconds: '45', nanos: 0 });
    assert.ok(over.response_headers_to_add.some((h) => h.key === 'retry-after' && h.value === '45'));
  });

  it('nested descriptors match only at the level of the last entry, most specific value first', async () => {
    const [barAny, barBanned, onlyFoo, unknown] = (
      await r.client.call(
        rl('rl', [
          [
            ['foo', 'f1'],
            ['bar', 'x'],
          ],
          [
            ['foo', 'f1'],
            ['bar', 'banned'],
          ],
          [['foo', 'f2']],
          [['nope', 'x']],
        ]),
      )
    ).statuses;
    assert.equal(barAny!.current_limit!.requests_per_unit, 3);
    assert.equal(barBanned!.code, 'OVER_LIMIT');
    assert.equal(barBanned!.current_limit!.requests_per_unit, 0);
    assert.equal(onlyFoo!.current_limit!.requests_per_unit, 2);
    assert.deepEqual({ code: unknown!.code, limit: unknown!.current_limit }, { code: 'OK', limit: null });
    const e4 = await r.client.call(
      rl('example4', [
        [['key', 'value']],
        [
          ['key', 'value'],
          ['subkey', 'x'],
        ],
      ]),
    );
    assert.equal(e4.statuses[0]!.current_limit, null);
    assert.equal(e4.statuses[1]!.current_limit!.requests_per_unit, 300);
  });

  it('a refused request is charged nowhere (rejected hits do not count)', async () => {
    const both = rl('rl', [
      [['foo', 'g1']],
      [
        ['foo', 'g1'],
        ['bar', 'banned'],
      ],
    ]);
    for (let i = 0; i < 3; i++) assert.equal((await r.client.call(both)).overall_code, 'OVER_LIMIT');
    const alone = await r.client.call(rl('rl', [[['foo', 'g1']]]));
    assert.equal(alone.overall_code, 'OK');
    assert.equal(alone.statuses[0]!.limit_remaining, 1, 'the three refused requests spent nothing on foo=g1');
    // foo allows 2 per minute, bar 3: once foo is spent, bar stays untouched.
    await r.client.call(
      rl('rl', [
        [['foo', 'g2']],
        [
          ['foo', 'g2'],
          ['bar', 'b'],
        ],
      ]),
    );
    await r.client.call(
      rl('rl', [
        [['foo', 'g2']],
        [
          ['foo', 'g2'],
          ['bar', 'b'],
        ],
      ]),
    );
    const third = await r.client.call(
      rl('rl', [
        [['foo', 'g2']],
        [
          ['foo', 'g2'],
          ['bar', 'b'],
        ],
      ]),
    );
    assert.deepEqual(
      third.statuses.map((s) => [s.code, s.limit_remaining]),
      [
        ['OVER_LIMIT', 0],
        ['OK', 1],
      ],
    );
  });

  it('shadow mode counts but always answers OK', async () => {
    const shady = rl('rl', [
      [
        ['foo', 's'],
        ['baz', 'shady'],
      ],
    ]);
    const first = await r.client.call(shady);
    assert.deepEqual([first.overall_code, first.statuses[0]!.limit_remaining], ['OK', 0]);
    const second = await r.client.call(shady);
    assert.equal(second.overall_code, 'OK');
    assert.equal(second.statuses[0]!.code, 'OK');
    assert.equal(second.statuses[0]!.current_limit!.requests_per_unit, 1);
    const notShady = rl('rl', [
      [
        ['foo', 's'],
        ['baz', 'not-so-shady'],
      ],
    ]);
    assert.equal((await r.client.call(notShady)).overall_code, 'OK');
    assert.equal((await r.client.call(notShady)).overall_code, 'OVER_LIMIT', 'baz allows 1 per second');
  });

  it('unlimited answers OK with the largest remaining, and no current limit', async () => {
    const res = await r.client.call(
      rl('rl', [
        [['qux', 'x']],
        [
          ['foo', 'u'],
          ['bay', 'x'],
        ],
      ]),
    );
    for (const s of res.statuses)
      assert.deepEqual([s.code, s.limit_remaining, s.current_limit], ['OK', 4294967295, null]);
    assert.equal(res.response_headers_to_add.length, 0);
  });

  it('replaces: a replaced limit is neither applied nor charged (README example 7)', async () => {
    const a = [
      ['key_1', 'value_1'],
      ['user', 'bkthomps'],
    ] as Array<[string, string]>;
    const b = [
      ['key_2', 'value_2'],
      ['user', 'bkthomps'],
    ] as Array<[string, string]>;
    const both = await r.client.call(rl('example7', [a, b]));
    assert.equal(both.statuses[0]!.current_limit, null);
    assert.equal(both.statuses[1]!.current_limit!.requests_per_unit, 10);
    const onlyA = await r.client.call(rl('example7', [a]));
    assert.deepEqual(
      [onlyA.statuses[0]!.current_limit!.name, onlyA.statuses[0]!.limit_remaining],
      ['specific_limit', 4],
    );
  });

  it('wildcard values match by prefix, each value its own counter (README example 9)', async () => {
    const res = await r.client.call(
      rl('example9', [[['key1', 'value_1']], [['key1', 'value_1']], [['key1', 'other']]]),
    );
    assert.deepEqual(
      res.statuses.map((s) => s.current_limit?.requests_per_unit ?? null),
      [20, 20, null],
    );
    assert.deepEqual(
      res.statuses.map((s) => s.limit_remaining),
      [19, 18, 0],
      'the same counter twice: charged in turn',
    );
    const other = await r.client.call(rl('example9', [[['key1', 'value_2']]]));
    assert.equal(other.statuses[0]!.limit_remaining, 19);
  });

  it('hits_addend: the request default, a descriptor override, and 0 asking without counting', async () => {
    const res = await r.client.call({
      ...rl('mongo_cps', [[['database', 'users']], [['database', 'default']]]),
      hits_addend: 100,
    });
    assert.deepEqual(
      res.statuses.map((s) => s.limit_remaining),
      [400, 400],
    );
    const own = await r.client.call({
      domain: 'mongo_cps',
      hits_addend: 100,
      descriptors: [
        { entries: [{ key: 'database', value: 'users' }], hits_addend: { value: '7' } },
        { entries: [{ key: 'database', value: 'default' }], hits_addend: { value: '0' } },
      ],
    });
    assert.deepEqual(
      own.statuses.map((s) => s.limit_remaining),
      [393, 400],
    );
    const ask = await r.client.call({
      domain: 'mongo_cps',
      descriptors: [{ entries: [{ key: 'database', value: 'default' }], hits_addend: { value: '0' } }],
    });
    assert.deepEqual([ask.overall_code, ask.statuses[0]!.limit_remaining], ['OK', 400]);
    const tooMany = await r.client.call({ ...rl('mongo_cps', [[['database', 'users']]]), hits_addend: 501 });
    assert.deepEqual([tooMany.overall_code, tooMany.statuses[0]!.limit_remaining], ['OVER_LIMIT', 393]);
  });

  it("a descriptor's own limit overrides the config", async () => {
    const res = await r.client.call({
      domain: 'rl',
      descriptors: [{ entries: [{ key: 'anything', value: 'a' }], limit: { requests_per_unit: 5, unit: 'HOUR' } }],
    });
    assert.deepEqual(res.statuses[0]!.current_limit, { requests_per_unit: 5, unit: 'HOUR', name: '' });
    assert.equal(res.statuses[0]!.limit_remaining, 4);
  });

  it('an unknown domain answers OK with no limits', async () => {
    const res = await r.client.call(rl('no-such-domain', [[['a', 'b']]]));
    assert.deepEqual([res.overall_code, res.statuses[0]!.current_limit], ['OK', null]);
  });
});

describe('gRPC ShouldRateLimit: malformed requests get INVALID_ARGUMENT with a message', () => {
  let r: Running;
  before(async () => {
    r = await run(
      domainsOf('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5 }\n'),
    );
  });
  after(() => r.close());

  async function rejects(req: unknown, pattern: RegExp): Promise<void> {
    await assert.rejects(r.client.call(req), (e: grpc.ServiceError) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
      assert.match(e.details, pattern);
      return true;
    });
  }

  it('missing domain, empty descriptors, empty entries, an empty key', async () => {
    await rejects({ descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }, /^domain must be a non-empty string/);
    await rejects({ domain: 'd', descriptors: [] }, /^descriptors must be a non-empty list/);
    await rejects(
      { domain: 'd', descriptors: [{ entries: [] }] },
      /^descriptors\[0\]\.entries must be a non-empty list/,
    );
    await rejects(
      { domain: 'd', descriptors: [{ entries: [{ key: '', value: 'v' }] }] },
      /^descriptors\[0\]\.entries\[0\]\.key must be a non-empty string/,
    );
  });

  it('a huge hits_addend, an unknown unit, too many descriptors', async () => {
    await rejects(
      {
        domain: 'd',
        descriptors: [{ entries: [{ key: 'k', value: 'v' }], hits_addend: { value: '18446744073709551615' } }],
      },
      /hits_addend is 18446744073709551615; at most 4294967295/,
    );
    await rejects(
      { domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 1, unit: 9 } }] },
      /descriptors\[0\]\.limit\.unit is 9/,
    );
    await rejects(
      { domain: 'd', descriptors: Array.from({ length: 65 }, () => ({ entries: [{ key: 'k', value: 'v' }] })) },
      /at most 64/,
    );
  });

  it('the server keeps serving after them', async () => {
    const res = await r.client.call(rl('d', [[['k', 'v']]]));
    assert.equal(res.statuses[0]!.limit_remaining, 4);
  });
});
