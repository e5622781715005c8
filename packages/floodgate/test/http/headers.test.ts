import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseItem, parseList, type Item } from 'structured-headers';
import { byHeader, type HttpLimitOptions } from '../../src/http/index.js';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  Limiter,
  ManualClock,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Decision,
} from '../../src/index.js';
import { adapters, type Running } from './servers.js';

/** Each policy with the window (w, seconds) its parameters imply: time to restore the whole limit. */
const policies: [string, () => Algorithm, number][] = [
  ['token-bucket', () => tokenBucket({ capacity: 3, refillPerSecond: 0.5 }), 6],
  ['leaky-bucket', () => leakyBucket({ capacity: 3, leakPerSecond: 2 }), 2],
  ['fixed-window', () => fixedWindow({ limit: 3, windowMs: 10_000 }), 10],
  ['sliding-window-log', () => slidingWindowLog({ limit: 3, windowMs: 4_500 }), 5],
  ['sliding-window-counter', () => slidingWindowCounter({ limit: 3, windowMs: 10_000 }), 10],
  ['sub-window-counter', () => slidingWindowCounter({ limit: 3, windowMs: 10_000, subWindows: 5 }), 10],
  ['gcra', () => gcra({ rate: 2, periodMs: 3000, maxBurst: 2 }), 5],
];

/** Times (ms after start) of the requests: a burst, a refusal, then partial recovery. */
const stepsMs = [0, 0, 0, 0, 700, 1500, 2600, 4000, 4100, 9000, 12_000];

function params(item: Item): Record<string, unknown> {
  return Object.fromEntries(item[1]);
}

function expectedT(d: Decision): number {
  return Math.ceil((d.allowed ? d.resetMs : d.retryAfterMs) / 1000);
}

describe('header conformance (parsed as RFC 9651 structured fields)', () => {
  let app: Running | undefined;
  after(async () => app?.close());

  for (const [name, policy, windowSeconds] of policies) {
    it(`${name}: RateLimit-Policy and RateLimit match the decisions, Retry-After is never before t`, async () => {
      const clock = new ManualClock(1_000_000);
      const twinClock = new ManualClock(1_000_000);
      const twin = new Limiter({ policy: policy(), clock: twinClock });
      app = await adapters.node!({ limiter: new Limiter({ policy: policy(), clock }), name: 'per-ip' });
      for (const at of stepsMs) {
        clock.set(1_000_000 + at);
        twinClock.set(1_000_000 + at);
        const res = await fetch(`${app.url}/ok`);
        await res.arrayBuffer();
        const want = twin.consumeSync('k');
        assert.equal(res.status, want.allowed ? 200 : 429, `status at ${at} ms`);
        const [policyItem, ...morePolicies] = parseList(res.headers.get('ratelimit-policy')!) as Item[];
        assert.equal(morePolicies.length, 0);
        assert.equal(policyItem![0], 'per-ip');
        assert.deepEqual(params(policyItem!), { q: want.limit, w: windowSeconds });
        const [service] = parseList(res.headers.get('ratelimit')!) as Item[];
        assert.equal(service![0], 'per-ip');
        assert.deepEqual(params(service!), { r: want.remaining, t: expectedT(want) }, `RateLimit at ${at} ms`);
        if (!want.allowed) {
          const [retryAfter] = parseItem(res.headers.get('retry-after')!);
          assert.equal(retryAfter, Math.ceil(want.retryAfterMs / 1000));
          assert.ok((retryAfter as number) >= (params(service!).t as number));
          assert.equal(res.headers.get('cache-control'), 'no-store');
        } else {
          assert.equal(res.headers.get('retry-after'), null);
        }
      }
      await app.close();
      app = undefined;
    });
  }
});

describe('combined limits, legacy headers and partition keys', () => {
  let app: Running;
  const clock = new ManualClock(1_000_000);
  const perSecond = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 1000 }), clock });
  const perDay = new Limiter({ policy: fixedWindow({ limit: 1000, windowMs: 86_400_000 }), clock });
  const options: HttpLimitOptions<unknown> = {
    dimensions: [
      { name: 'burst', limiter: perSecond },
      { name: 'daily', limiter: perDay, key: byHeader('x-user'), quotaUnit: 'requests' },
    ],
    legacyHeaders: true,
    partitionKeys: { secret: 'a test secret of 32 characters.' },
  };
  before(async () => {
    app = await adapters.express!(options);
  });
  after(async () => app.close());

  it('reports every policy, with pk as a byte sequence, and the closest one in X-RateLimit-*', async () => {
    const get = (): Promise<Response> => fetch(`${app.url}/ok`, { headers: { 'x-user': 'alice' } });
    await (await get()).arrayBuffer();
    const res = await get();
    const policy = parseList(res.headers.get('ratelimit-policy')!) as Item[];
    assert.deepEqual(
      policy.map((i) => [i[0], params(i).q, params(i).w]),
      [
        ['burst', 2, 1],
        ['daily', 1000, 86_400],
      ],
    );
    const service = parseList(res.headers.get('ratelimit')!) as Item[];
    assert.deepEqual(
      service.map((i) => [i[0], params(i).r]),
      [
        ['burst', 0],
        ['daily', 998],
      ],
    );
    for (const item of [...policy, ...service]) assert.equal((params(item).pk as ArrayBuffer).byteLength, 16);
    assert.notDeepEqual(params(service[0]!).pk, params(service[1]!).pk);
    assert.equal(res.headers.get('x-ratelimit-limit'), '2');
    assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(res.headers.get('x-ratelimit-reset'), '1');
    const refused = await get();
    assert.equal(refused.status, 429);
    assert.deepEqual(((await refused.json()) as Record<string, unknown>)['violated-policies'], ['burst']);
    const daily = (parseList(refused.headers.get('ratelimit')!) as Item[])[1]!;
    assert.equal(params(daily).r, 998, 'the refused request spent nothing from the daily quota');
  });

  it('writes X-RateLimit-Reset as epoch seconds when asked', async () => {
    const epoch = await adapters.koa!({
      limiter: new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock }),
      legacyHeaders: 'epoch-seconds',
      clock,
    });
    try {
      clock.set(1_000_000);
      const res = await fetch(`${epoch.url}/ok`);
      assert.equal(res.headers.get('x-ratelimit-reset'), String(Math.ceil(1_020_000 / 1000)));
      assert.equal(res.headers.get('x-ratelimit-remaining'), '4');
    } finally {
      await epoch.close();
    }
  });

  it('can leave the draft headers out', async () => {
    const bare = await adapters.hono!({
      limiter: new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }) }),
      draftHeaders: false,
    });
    try {
      const res = await fetch(`${bare.url}/ok`);
      assert.equal(res.headers.get('ratelimit'), null);
      assert.equal(res.headers.get('ratelimit-policy'), null);
    } finally {
      await bare.close();
    }
  });
});
