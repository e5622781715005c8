import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import {
  consumeAll,
  FloodgateError,
  fixedWindow,
  gcra,
  Limiter,
  ManualClock,
  MemoryStore,
  slidingWindowCounter,
  tokenBucket,
  type Algorithm,
  type Decision,
} from 'floodgate';
import { RedisStore, ioredisAdapter } from 'floodgate/redis';
import { request } from 'undici';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import {
  createRateLimitService,
  DecisionError,
  MAX_REMOTE_POLICIES,
  RemoteStore,
  StoreApi,
} from '../../src/ratelimit/index.js';
import { run, START_MS, type Running } from './support.js';
import { closedPort, silentPort } from '../support/ports.js';

function code(expected: string): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof FloodgateError, `expected a FloodgateError, got ${String(e)}`);
    assert.equal(e.code, expected, e.message);
    return true;
  };
}

async function postStore(
  port: number,
  body: unknown,
): Promise<{ status: number; body: { error?: { field?: string; message?: string } } }> {
  const res = await request(`http://127.0.0.1:${port}/v1/store`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.statusCode, body: (await res.body.json()) as { error?: { field?: string } } };
}

const POLICIES: ReadonlyArray<[string, Algorithm]> = [
  ['gcra', gcra({ rate: 5, periodMs: 1000, maxBurst: 2 })],
  ['token-bucket', tokenBucket({ capacity: 4, refillPerSecond: 2 })],
  ['fixed-window', fixedWindow({ limit: 3, windowMs: 1000 })],
  ['sliding-window-counter', slidingWindowCounter({ limit: 3, windowMs: 1000 })],
];

describe('RemoteStore on a service on the memory store', () => {
  let r: Running;
  let store: RemoteStore;
  before(async () => {
    r = await run([]);
    store = new RemoteStore({ url: `http://127.0.0.1:${r.servers.httpPort!}`, timeoutMs: 2000 });
  });
  after(async () => {
    await store.close();
    await r.close();
  });

  for (const [name, policy] of POLICIES) {
    it(`decides ${name} step for step as a local limiter with the same policy`, async () => {
      const remote = new Limiter({ policy, store });
      const local = new Limiter({ policy, store: new MemoryStore(), clock: r.clock });
      const costs = [1, 1, 2, 1, 1, 3, 1, 1, 1, 2];
      for (let step = 0; step < 24; step++) {
        const cost = costs[step % costs.length]!;
        const key = `${name}-k${step % 2}`;
        const mine: Decision = await local.consume(key, { cost });
        const theirs: Decision = await remote.consume(key, { cost });
        assert.deepEqual(theirs, mine, `step ${step}`);
        if (step % 3 === 2) r.clock.advance(130);
      }
      assert.deepEqual(await remote.peek(`${name}-k0`), await local.peek(`${name}-k0`));
      await remote.refund(`${name}-k0`, 1);
      await local.refund(`${name}-k0`, 1);
      assert.deepEqual(await remote.peek(`${name}-k0`), await local.peek(`${name}-k0`));
      await remote.reset(`${name}-k1`);
      const fresh = await remote.peek(`${name}-k1`);
      assert.equal(fresh.allowed, true);
      assert.equal(fresh.remaining, policy.limit - 1);
    });
  }

  it('keeps keys of different policies apart and a refused request uncharged', async () => {
    const a = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 60_000 }), store });
    const b = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), store });
    assert.equal((await a.consume('shared', { cost: 2 })).allowed, true);
    assert.equal((await a.consume('shared')).allowed, false);
    assert.equal((await b.consume('shared', { cost: 5 })).allowed, true);
    assert.equal((await a.consume('shared')).reason, 'limit');
  });

  it('decides consumeAll over remote limits in one call, all or nothing', async () => {
    const perUser = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 3_600_000 }), store });
    const perTeam = new Limiter({ policy: tokenBucket({ capacity: 4, refillPerSecond: 0.001 }), store });
    let calls = 0;
    const original = store.consumeAll.bind(store);
    store.consumeAll = (requests) => {
      calls++;
      return original(requests);
    };
    try {
      const first = await consumeAll([
        { limiter: perUser, key: 'u1' },
        { limiter: perTeam, key: 't1', cost: 3 },
      ]);
      assert.equal(first.allowed, true);
      assert.deepEqual(
        first.decisions.map((d) => d.remaining),
        [2, 1],
      );
      const second = await consumeAll([
        { limiter: perUser, key: 'u1' },
        { limiter: perTeam, key: 't1', cost: 2 },
      ]);
      assert.equal(second.allowed, false);
      assert.deepEqual(
        second.decisions.map((d) => d.allowed),
        [true, false],
      );
      assert.equal(calls, 2, 'one call per consumeAll');
      assert.equal((await perUser.peek('u1')).remaining, 1, 'the refused request charged nothing');
    } finally {
      store.consumeAll = original;
    }
    const res = await postStore(r.servers.httpPort!, {
      op: 'consumeAll',
      requests: [
        { policy: { algorithm: 'gcra', params: { rate: 1, periodMs: 1000, maxBurst: 0 } }, key: 'k' },
        { policy: { algorithm: 'gcra' }, key: 'k' },
      ],
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.error?.field, 'requests[1].policy.params');
  });

  it('refuses a bad policy spec, key, cost or op with a 400 naming the field', async () => {
    const port = r.servers.httpPort!;
    const good = { algorithm: 'gcra', params: { rate: 5, periodMs: 1000, maxBurst: 2 } };
    const cases: Array<[unknown, string]> = [
      [{ op: 'consume', policy: { algorithm: 'nope', params: {} }, key: 'k' }, 'policy.algorithm'],
      [{ op: 'consume', policy: { algorithm: 'gcra' }, key: 'k' }, 'policy.params'],
      [
        { op: 'consume', policy: { algorithm: 'gcra', params: { rate: -1, periodMs: 1000, maxBurst: 2 } }, key: 'k' },
        'policy.params.rate',
      ],
      [
        { op: 'consume', policy: { algorithm: 'gcra', params: { ...good.params, extra: 1 } }, key: 'k' },
        'policy.params.extra',
      ],
      [
        { op: 'consume', policy: { algorithm: 'gcra', params: { ...good.params, rate: '5' } }, key: 'k' },
        'policy.params.rate',
      ],
      [{ op: 'consume', policy: good, key: '' }, 'key'],
      [{ op: 'consume', policy: good, key: 'k', cost: 99 }, 'cost'],
      [{ op: 'consume', policy: good, key: 'k', cost: -1 }, 'cost'],
      [{ op: 'drop', policy: good, key: 'k' }, 'op'],
      [null, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await postStore(port, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.field, field, res.body.error?.message);
    }
  });

  it('holds at most MAX_REMOTE_POLICIES policy specs, then refuses new ones but serves known ones', async () => {
    const api = new StoreApi(createRateLimitService({ domains: [], clock: new ManualClock(START_MS) }));
    const spec = (limit: number) => ({ algorithm: 'fixed-window', params: { limit, windowMs: 1000 } });
    for (let limit = 1; limit <= MAX_REMOTE_POLICIES; limit++)
      await api.handle({ op: 'peek', policy: spec(limit), key: 'k' });
    await assert.rejects(
      api.handle({ op: 'peek', policy: spec(MAX_REMOTE_POLICIES + 1), key: 'k' }),
      (e: unknown) => e instanceof DecisionError && e.field === 'policy',
    );
    assert.deepEqual(await api.handle({ op: 'consume', policy: spec(7), key: 'k' }), {
      decision: { allowed: true, limit: 7, remaining: 6, retryAfterMs: 0, resetMs: 1000, reason: 'ok' },
    });
  });

  it('rejects a policy no factory builds before any call', () => {
    const odd = { ...fixedWindow({ limit: 2, windowMs: 1000 }), name: 'custom' };
    assert.throws(() => new Limiter({ policy: odd, store }), code('INVALID_OPTION'));
  });

  it('refuses bad options with typed errors', () => {
    assert.throws(() => new RemoteStore({ url: 'grpc://127.0.0.1:1' }), code('INVALID_OPTION'));
    assert.throws(() => new RemoteStore({ url: 'http://127.0.0.1:1', timeoutMs: 0 }), code('INVALID_OPTION'));
    assert.throws(
      () => new RemoteStore({ url: 'http://127.0.0.1:1', onError: 'maybe' as never }),
      code('INVALID_OPTION'),
    );
  });
});

describe('RemoteStore failures', () => {
  const policy = gcra({ rate: 5, periodMs: 1000, maxBurst: 2 });
  let silent: { port: number; close: () => Promise<void> };
  let closed: number;
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  before(async () => {
    process.on('unhandledRejection', onUnhandled);
    silent = await silentPort();
    closed = await closedPort();
  });
  after(async () => {
    await silent.close();
    process.off('unhandledRejection', onUnhandled);
    assert.deepEqual(unhandled, []);
  });

  for (const onError of ['throw', 'fail-open', 'fail-closed'] as const) {
    it(`a closed port: ${onError}`, async () => {
      const store = new RemoteStore({ url: `http://127.0.0.1:${closed}`, onError, timeoutMs: 2000 });
      const limiter = new Limiter({ policy, store });
      try {
        if (onError === 'throw') await assert.rejects(limiter.consume('k'), code('STORE_ERROR'));
        else {
          const d = await limiter.consume('k');
          assert.equal(d.reason, onError);
          assert.equal(d.allowed, onError === 'fail-open');
        }
        await assert.rejects(limiter.reset('k'), code('STORE_ERROR'));
      } finally {
        await store.close();
      }
    });

    it(`a service that never answers, cut off on injected timers: ${onError}`, async () => {
      const timers = new ManualClock(START_MS);
      const events: string[] = [];
      const store = new RemoteStore({
        url: `http://127.0.0.1:${silent.port}`,
        onError,
        timeoutMs: 50,
        timers,
        clock: timers,
        observer: { storeError: (e) => void events.push((e.error as FloodgateError).code) },
      });
      const limiter = new Limiter({ policy, store });
      try {
        const pending = limiter.consume('k');
        await new Promise((resolve) => setTimeout(resolve, 20));
        timers.advance(50);
        if (onError === 'throw') await assert.rejects(pending, code('STORE_TIMEOUT'));
        else assert.equal((await pending).reason, onError);
        assert.deepEqual(events, ['STORE_TIMEOUT']);
      } finally {
        await store.close();
      }
    });
  }
});

describe('RemoteStore on a service on a real Redis', () => {
  let redis: RedisServers;
  let client: Redis;
  let r: Running;
  let store: RemoteStore;
  before(async () => {
    redis = await startRedisServer();
    client = new Redis({ host: '127.0.0.1', port: redis.ports[0]!, lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    await client.connect();
    r = await run(
      [],
      new RedisStore({ adapter: ioredisAdapter(client), prefix: 'remote:', onError: 'throw', timeoutMs: 500 }),
    );
    store = new RemoteStore({ url: `http://127.0.0.1:${r.servers.httpPort!}`, timeoutMs: 2000 });
  });
  after(async () => {
    await store.close();
    await r.close();
    client.disconnect();
    await redis.stop();
  });

  it('admits and refuses as a local limiter would within one window, and counts in Redis', async () => {
    const policy = fixedWindow({ limit: 4, windowMs: 3_600_000 });
    const remote = new Limiter({ policy, store });
    const local = new Limiter({ policy, store: new MemoryStore(), clock: new ManualClock(START_MS) });
    for (const cost of [1, 2, 2, 1, 1]) {
      const [theirs, mine] = [await remote.consume('rk', { cost }), await local.consume('rk', { cost })];
      assert.equal(theirs.allowed, mine.allowed);
      assert.equal(theirs.remaining, mine.remaining);
    }
    assert.ok((await client.keys('remote:*')).length > 0);
  });

  it('decides consumeAll on Redis all or nothing', async () => {
    const a = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 3_600_000 }), store });
    const b = new Limiter({ policy: gcra({ rate: 1, periodMs: 3_600_000, maxBurst: 2 }), store });
    assert.equal(
      (
        await consumeAll([
          { limiter: a, key: 'ra' },
          { limiter: b, key: 'rb', cost: 3 },
        ])
      ).allowed,
      true,
    );
    const refused = await consumeAll([
      { limiter: a, key: 'ra' },
      { limiter: b, key: 'rb' },
    ]);
    assert.equal(refused.allowed, false);
    assert.equal((await a.peek('ra')).allowed, true, 'the refused request charged nothing: one hit is left');
  });

  it("answers 503 as STORE_ERROR when the service's Redis is gone", async () => {
    await redis.kill(0);
    const limiter = new Limiter({ policy: fixedWindow({ limit: 4, windowMs: 60_000 }), store });
    await assert.rejects(limiter.consume('rk2'), code('STORE_ERROR'));
    const open = new RemoteStore({
      url: `http://127.0.0.1:${r.servers.httpPort!}`,
      timeoutMs: 2000,
      onError: 'fail-open',
    });
    assert.equal(
      (await new Limiter({ policy: fixedWindow({ limit: 4, windowMs: 60_000 }), store: open }).consume('rk2')).reason,
      'fail-open',
    );
    await open.close();
  });
});
