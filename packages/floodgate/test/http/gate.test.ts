import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { byHeader, byRoute, byUser, HttpGate, type HttpLimitOptions, type Verdict } from '../../src/http/index.js';
import {
  fixedWindow,
  FloodgateError,
  gcra,
  leakyBucket,
  Limiter,
  ManualClock,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type DecisionEvent,
  type Store,
} from '../../src/index.js';
import { asyncStore, failingStore, FakeView, memoryLogger, type FakeRequest } from './support.js';

const policies: Record<string, () => Algorithm> = {
  'token-bucket': () => tokenBucket({ capacity: 4, refillPerSecond: 1 }),
  'leaky-bucket': () => leakyBucket({ capacity: 4, leakPerSecond: 1 }),
  'fixed-window': () => fixedWindow({ limit: 4, windowMs: 10_000 }),
  'sliding-window-log': () => slidingWindowLog({ limit: 4, windowMs: 10_000 }),
  'sliding-window-counter': () => slidingWindowCounter({ limit: 4, windowMs: 10_000 }),
  'sub-window-counter': () => slidingWindowCounter({ limit: 4, windowMs: 10_000, subWindows: 10 }),
  gcra: () => gcra({ rate: 1, periodMs: 1000, maxBurst: 3 }),
};

function limiter(policy: Algorithm, clock: ManualClock, store?: Store): Limiter {
  // onError 'throw': a store's errors reach the gate, whose onStoreError these tests are about.
  return new Limiter({ policy, clock, ...(store ? { store, onError: 'throw' as const } : {}) });
}

async function run(gate: HttpGate<FakeRequest>, request: FakeRequest = {}): Promise<Verdict> {
  return gate.check(new FakeView(gate.clientIp, request));
}

async function remaining(l: Limiter, key: string): Promise<number> {
  return (await l.peek(key, { cost: 0 })).remaining;
}

describe('several dimensions decided together', () => {
  for (const [name, policy] of Object.entries(policies)) {
    for (const storeKind of ['memory', 'async'] as const) {
      it(`${name} (${storeKind}): a refused request leaves every dimension's remaining unchanged`, async () => {
        const clock = new ManualClock(1_000_000);
        const store = storeKind === 'async' ? asyncStore() : undefined;
        const ip = limiter(tokenBucket({ capacity: 100, refillPerSecond: 1 }), clock, store);
        const user = limiter(policy(), clock, store);
        const route = limiter(fixedWindow({ limit: 100, windowMs: 60_000 }), clock, store);
        const gate = new HttpGate<FakeRequest>({
          dimensions: [
            { name: 'ip', limiter: ip },
            { name: 'user', limiter: user, key: byHeader('x-user') },
            { name: 'route', limiter: route, key: byRoute() },
          ],
        });
        const request = { headers: { 'x-user': 'u1' }, route: '/r' };
        for (let i = 0; i < 4; i++) assert.equal((await run(gate, request)).allowed, true);
        const keys: [Limiter, string][] = [
          [ip, 'ip/ip:127.0.0.1'],
          [user, 'user/header:x-user:u1'],
          [route, 'route/route:GET /r'],
        ];
        const before = await Promise.all(keys.map(([l, k]) => remaining(l, k)));
        assert.deepEqual(before, [96, 0, 96]);
        const refused = await run(gate, request);
        assert.equal(refused.allowed, false);
        assert.equal(refused.statusCode, 429);
        assert.deepEqual(await Promise.all(keys.map(([l, k]) => remaining(l, k))), before);
        const body = JSON.parse(refused.body!) as Record<string, unknown>;
        assert.deepEqual(body['violated-policies'], ['user']);
        const rateLimit = refused.headers.find(([n]) => n === 'ratelimit')![1];
        assert.match(rateLimit, /^"ip";r=96;t=\d+, "user";r=0;t=\d+, "route";r=96;t=\d+$/);
      });
    }
  }

  it('reports the policies of the dimensions that apply, and only those, in their order', async () => {
    const clock = new ManualClock();
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'ip', limiter: limiter(fixedWindow({ limit: 10, windowMs: 60_000 }), clock) },
        { name: 'user', limiter: limiter(fixedWindow({ limit: 5, windowMs: 60_000 }), clock), key: byHeader('x-user') },
        { name: 'route', limiter: limiter(fixedWindow({ limit: 7, windowMs: 1_000 }), clock), key: byRoute() },
      ],
    });
    const header = (v: Verdict, name: string): string | undefined => v.headers.find(([n]) => n === name)?.[1];
    for (let i = 0; i < 2; i++) {
      const both = await run(gate, { headers: { 'x-user': 'u' }, route: '/r' });
      assert.equal(header(both, 'ratelimit-policy'), '"ip";q=10;w=60, "user";q=5;w=60, "route";q=7;w=1');
      assert.equal(
        header(both, 'ratelimit'),
        `"ip";r=${9 - 2 * i};t=60, "user";r=${4 - i};t=60, "route";r=${6 - 2 * i};t=1`,
      );
      const anonymous = await run(gate, { route: '/r' });
      assert.equal(header(anonymous, 'ratelimit-policy'), '"ip";q=10;w=60, "route";q=7;w=1');
      assert.equal(header(anonymous, 'ratelimit'), `"ip";r=${8 - 2 * i};t=60, "route";r=${5 - 2 * i};t=1`);
    }
  });

  it('checks synchronous limiters without a promise, and asynchronous ones with one', async () => {
    const clock = new ManualClock();
    const sync = new HttpGate<FakeRequest>({
      limiter: limiter(tokenBucket({ capacity: 1, refillPerSecond: 1 }), clock),
    });
    const async = new HttpGate<FakeRequest>({
      limiter: limiter(tokenBucket({ capacity: 1, refillPerSecond: 1 }), clock, asyncStore()),
    });
    assert.ok(!(sync.check(new FakeView(sync.clientIp, {})) instanceof Promise));
    const pending = async.check(new FakeView(async.clientIp, {}));
    assert.ok(pending instanceof Promise);
    assert.equal((await pending).allowed, true);
  });

  it('skips a dimension whose identity or limiter is absent for the request', async () => {
    const clock = new ManualClock();
    const free = limiter(fixedWindow({ limit: 1, windowMs: 1000 }), clock);
    const paid = limiter(fixedWindow({ limit: 3, windowMs: 1000 }), clock);
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        {
          name: 'user',
          limiter: (req) =>
            req.header('x-plan') === 'none' ? undefined : req.header('x-plan') === 'paid' ? paid : free,
          key: byUser((raw: FakeRequest) => raw.headers?.['x-user']),
        },
      ],
    });
    const verdicts = [];
    for (let i = 0; i < 4; i++)
      verdicts.push((await run(gate, { headers: { 'x-user': 'p', 'x-plan': 'paid' } })).allowed);
    assert.deepEqual(verdicts, [true, true, true, false]);
    assert.equal((await run(gate, { headers: { 'x-user': 'f' } })).allowed, true);
    assert.equal((await run(gate, { headers: { 'x-user': 'f' } })).allowed, false);
    assert.deepEqual((await run(gate, { headers: { 'x-user': 'f', 'x-plan': 'none' } })).headers, []);
    assert.deepEqual((await run(gate, {})).headers, [], 'anonymous: no user identity, no dimension');
  });
});

describe('cost, skip and allow lists', () => {
  it('charges the cost, and refuses forever a cost above the limit (no Retry-After)', async () => {
    const l = limiter(fixedWindow({ limit: 5, windowMs: 1000 }), new ManualClock());
    const gate = new HttpGate<FakeRequest>({
      limiter: l,
      cost: (req) => Number(req.header('x-cost') ?? 1),
      logger: memoryLogger(),
    });
    assert.equal((await run(gate, { headers: { 'x-cost': '3' } })).allowed, true);
    assert.equal(await remaining(l, 'default/ip:127.0.0.1'), 2);
    const huge = await run(gate, { headers: { 'x-cost': '6' } });
    assert.equal(huge.statusCode, 429);
    assert.equal(
      huge.headers.find(([n]) => n === 'retry-after'),
      undefined,
    );
    assert.equal(huge.headers.find(([n]) => n === 'ratelimit')![1], '"default";r=2');
    assert.equal(await remaining(l, 'default/ip:127.0.0.1'), 2);
    assert.equal(
      (await run(gate, { headers: { 'x-cost': '-1' } })).statusCode,
      500,
      "a bad cost is the application's fault",
    );
    assert.equal(await remaining(l, 'default/ip:127.0.0.1'), 2);
  });

  it('refuses a cost above the limit alike on the memory store and an asynchronous one, reported as a charge', async () => {
    const answers = [];
    for (const store of [undefined, asyncStore()]) {
      const events: DecisionEvent[] = [];
      const l = new Limiter({
        policy: fixedWindow({ limit: 5, windowMs: 1000 }),
        clock: new ManualClock(),
        observer: { decision: (e) => void events.push(e) },
        ...(store ? { store } : {}),
      });
      const gate = new HttpGate<FakeRequest>({ limiter: l, cost: (req) => Number(req.header('x-cost') ?? 1) });
      assert.equal((await run(gate, { headers: { 'x-cost': '3' } })).allowed, true);
      const huge = await run(gate, { headers: { 'x-cost': '6' } });
      answers.push({ status: huge.statusCode, headers: huge.headers, events: events.map((e) => ({ ...e, atMs: 0 })) });
      assert.equal(await remaining(l, 'default/ip:127.0.0.1'), 2, 'nothing charged');
    }
    assert.deepEqual(answers[1], answers[0]);
    assert.equal(answers[0]!.status, 429);
    const refusal = answers[0]!.events[1]!;
    assert.equal(refusal.operation, 'consume');
    assert.equal(refusal.cost, 6);
    assert.equal(refusal.decision.retryAfterMs, Infinity);
  });

  it('passes skipped and allow-listed requests untouched', async () => {
    const l = limiter(fixedWindow({ limit: 1, windowMs: 1000 }), new ManualClock());
    const gate = new HttpGate<FakeRequest>({
      limiter: l,
      skip: (req) => req.route === '/health',
      allowList: ['10.0.0.0/8', '2001:db8::/32'],
    });
    for (const request of [
      { route: '/health' },
      { remote: '10.1.2.3' },
      { remote: '2001:db8::5' },
      { remote: '::ffff:10.0.0.1' },
    ]) {
      const v = await run(gate, request);
      assert.equal(v.allowed, true);
      assert.deepEqual(v.headers, []);
    }
    assert.equal(await remaining(l, 'default/ip:127.0.0.1'), 1);
  });
});

describe('refundWhen', () => {
  it('gives the cost back to every dimension when the outcome says so', async () => {
    const clock = new ManualClock();
    const a = limiter(fixedWindow({ limit: 3, windowMs: 1000 }), clock);
    const b = limiter(tokenBucket({ capacity: 3, refillPerSecond: 1 }), clock, asyncStore());
    const gate = new HttpGate<FakeRequest>({
      dimensions: [
        { name: 'a', limiter: a },
        { name: 'b', limiter: b },
      ],
      refundWhen: (outcome) => outcome.statusCode < 400 || !outcome.completed,
    });
    const view = new FakeView(gate.clientIp, {});
    const ok = await gate.check(view);
    gate.settle(ok, { statusCode: 200, completed: true }, view);
    const failed = await gate.check(view);
    gate.settle(failed, { statusCode: 500, completed: true }, view);
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(await remaining(a, 'a/ip:127.0.0.1'), 2);
    assert.equal(await remaining(b, 'b/ip:127.0.0.1'), 2);
  });
});

describe('store failures', () => {
  const options = (
    onStoreError: 'fail-open' | 'fail-closed',
    logger = memoryLogger(),
  ): HttpLimitOptions<FakeRequest> => ({
    dimensions: [
      { name: 'local', limiter: limiter(fixedWindow({ limit: 5, windowMs: 1000 }), new ManualClock()) },
      {
        name: 'shared',
        limiter: limiter(fixedWindow({ limit: 5, windowMs: 1000 }), new ManualClock(), failingStore()),
      },
    ],
    onStoreError,
    logger,
  });

  it('fails open by default: admits, marks the response, logs the outage once', async () => {
    const logger = memoryLogger();
    const gate = new HttpGate<FakeRequest>({ ...options('fail-open', logger), onStoreError: undefined });
    for (let i = 0; i < 3; i++) {
      const v = await run(gate);
      assert.equal(v.allowed, true);
      assert.deepEqual(v.headers, [['floodgate-degraded', 'fail-open']]);
    }
    assert.equal(logger.messages.length, 1);
    assert.match(logger.messages[0]!, /the store behind "shared" failed; onStoreError "fail-open" answers/);
  });

  it('fails closed when asked: 503 temporary-reduced-capacity, nothing spent', async () => {
    const o = options('fail-closed');
    const gate = new HttpGate<FakeRequest>(o);
    const v = await run(gate);
    assert.equal(v.statusCode, 503);
    const body = JSON.parse(v.body!) as Record<string, unknown>;
    assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
    assert.deepEqual(body['violated-policies'], ['shared']);
    assert.deepEqual(Object.fromEntries(v.headers), {
      'floodgate-degraded': 'fail-closed',
      'retry-after': '1',
      'cache-control': 'no-store',
      'content-type': 'application/problem+json',
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(await remaining(o.dimensions![0]!.limiter as Limiter, 'local/ip:127.0.0.1'), 5);
  });
});

describe('concurrency', () => {
  it('admits exactly the limit of N concurrent requests on one key (asynchronous store)', async () => {
    const gate = new HttpGate<FakeRequest>({
      limiter: limiter(tokenBucket({ capacity: 7, refillPerSecond: 1 }), new ManualClock(), asyncStore()),
    });
    const verdicts = await Promise.all(Array.from({ length: 50 }, () => run(gate)));
    assert.equal(verdicts.filter((v) => v.allowed).length, 7);
  });
});

describe('options', () => {
  const l = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 1000 }) });
  const bad: [string, unknown][] = [
    ['neither limiter nor dimensions', {}],
    ['both', { limiter: l, dimensions: [{ name: 'a', limiter: l }] }],
    ['a bad name', { dimensions: [{ name: 'a b', limiter: l }] }],
    [
      'duplicate names',
      {
        dimensions: [
          { name: 'a', limiter: l },
          { name: 'a', limiter: l },
        ],
      },
    ],
    ['a limiter that is none', { limiter: {} }],
    ['a bad onStoreError', { limiter: l, onStoreError: 'maybe' }],
    ['a bad legacyHeaders', { limiter: l, legacyHeaders: 'epoch' }],
    ['a tiny maxKeyLength', { limiter: l, maxKeyLength: 10 }],
    ['a bad allowList', { limiter: l, allowList: ['nope'] }],
    ['a bad trustProxy', { limiter: l, trustProxy: 'yes' }],
  ];
  for (const [what, options] of bad) {
    it(`refuses ${what} with INVALID_OPTION`, () => {
      assert.throws(
        () => new HttpGate(options as HttpLimitOptions),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
      );
    });
  }
});
