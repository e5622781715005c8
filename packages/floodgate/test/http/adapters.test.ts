import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { byFunction, byRoute, type HttpLimitOptions } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, tokenBucket } from '../../src/index.js';
import { adapters, type Running } from './servers.js';
import { memoryLogger } from './support.js';

const windowLimit = (limit: number, clock = new ManualClock(0)): Limiter =>
  new Limiter({ policy: fixedWindow({ limit, windowMs: 60_000 }), clock });

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name} adapter on a real server`, () => {
    let app: Running | undefined;
    const run = async (options: HttpLimitOptions<unknown>, routes?: Parameters<typeof start>[1]): Promise<string> => {
      app = await start(options, routes);
      return app.url;
    };
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    it('admits with the draft headers, then refuses with 429, Retry-After and a problem body', async () => {
      const clock = new ManualClock(10_000);
      const url = await run({ limiter: windowLimit(2, clock) });
      for (const r of [2, 1]) {
        const res = await fetch(`${url}/ok`);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), 'ok');
        assert.equal(res.headers.get('ratelimit-policy'), '"default";q=2;w=60');
        assert.equal(res.headers.get('ratelimit'), `"default";r=${r - 1};t=50`);
      }
      const refused = await fetch(`${url}/ok`);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '50');
      assert.equal(refused.headers.get('cache-control'), 'no-store');
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const body = (await refused.json()) as Record<string, unknown>;
      assert.equal(body.type, 'https://iana.org/assignments/http-problem-types#quota-exceeded');
      assert.equal(body.status, 429);
      assert.deepEqual(body['violated-policies'], ['default']);
    });

    it('admits exactly the limit of N concurrent requests on one key', async () => {
      const url = await run({ limiter: new Limiter({ policy: tokenBucket({ capacity: 5, refillPerSecond: 1e-6 }) }) });
      const statuses = await Promise.all(
        Array.from({ length: 30 }, () => fetch(`${url}/ok`).then(async (r) => (await r.arrayBuffer(), r.status))),
      );
      assert.equal(statuses.filter((s) => s === 200).length, 5);
      assert.equal(statuses.filter((s) => s === 429).length, 25);
    });

    it('refunds by outcome: failed requests (500) do not count', async () => {
      const url = await run({ limiter: windowLimit(2), refundWhen: (o) => o.statusCode >= 500 });
      for (let i = 0; i < 4; i++) assert.equal((await fetch(`${url}/fail`)).status, 500);
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal((await fetch(`${url}/ok`)).headers.get('ratelimit'), '"default";r=1;t=60');
    });

    it('passes an error from an option (a negative cost) to the framework, which answers 500', async () => {
      const url = await run({ limiter: windowLimit(5), cost: () => -1 });
      const res = await fetch(`${url}/ok`);
      assert.equal(res.status, 500);
      await res.arrayBuffer();
    });

    it('ignores a spoofed X-Forwarded-For and warns once', async () => {
      const logger = memoryLogger();
      const url = await run({ limiter: windowLimit(1), logger });
      assert.equal((await fetch(`${url}/ok`, { headers: { 'x-forwarded-for': '1.1.1.1' } })).status, 200);
      assert.equal((await fetch(`${url}/ok`, { headers: { 'x-forwarded-for': '2.2.2.2' } })).status, 429);
      assert.equal(logger.messages.length, 1);
    });

    it('warns once, naming it, when a Forwarded header arrives untrusted', async () => {
      const logger = memoryLogger();
      const url = await run({ limiter: windowLimit(5), logger });
      for (let i = 0; i < 2; i++)
        assert.equal((await fetch(`${url}/ok`, { headers: { Forwarded: 'for=192.0.2.9' } })).status, 200);
      assert.equal(logger.messages.length, 1);
      assert.match(String(logger.messages[0]), /"forwarded"/);
    });

    it('keys IPv6 clients of one /56 together behind a trusted proxy', async () => {
      const url = await run({ limiter: windowLimit(2), trustProxy: ['127.0.0.1/32'] });
      const via = (ip: string): Promise<number> =>
        fetch(`${url}/ok`, { headers: { 'x-forwarded-for': ip } }).then(async (r) => (await r.arrayBuffer(), r.status));
      assert.equal(await via('2001:db8:1:100::1'), 200);
      assert.equal(await via('2001:db8:1:1ff::abcd'), 200);
      assert.equal(await via('2001:db8:1:1c0::7'), 429);
      assert.equal(await via('2001:db8:1:200::1'), 200);
      assert.equal(await via('203.0.113.5'), 200);
    });

    it('sees the route pattern where the framework knows it', async () => {
      const seen: string[] = [];
      const url = await run({
        dimensions: [
          { name: 'route', limiter: windowLimit(10), key: byRoute() },
          { name: 'probe', limiter: windowLimit(10), key: byFunction((req) => (seen.push(req.route), 'x')) },
        ],
      });
      const res = await fetch(`${url}/items/42?x=1`);
      assert.equal(res.status, 200);
      const expected = name === 'fastify' || name === 'hono' ? '/items/:id' : '/items/42';
      assert.deepEqual(seen, [expected]);
      assert.equal(res.headers.get('ratelimit-policy'), '"route";q=10;w=60, "probe";q=10;w=60');
    });
  });
}

describe('fastify per-route options', () => {
  it('exempts a route, or gives it its own limiter and name', async () => {
    const login = windowLimit(1);
    const app = await adapters.fastify!(
      { limiter: windowLimit(100) },
      { '/ok': false, '/items/:id': { limiter: login, name: 'login' } },
    );
    try {
      const ok = await fetch(`${app.url}/ok`);
      assert.equal(ok.headers.get('ratelimit'), null);
      assert.equal((await fetch(`${app.url}/items/1`)).headers.get('ratelimit-policy'), '"login";q=1;w=60');
      assert.equal((await fetch(`${app.url}/items/2`)).status, 429);
      assert.equal((await fetch(`${app.url}/fail`)).headers.get('ratelimit'), '"default";r=99;t=60');
    } finally {
      await app.close();
    }
  });
});
