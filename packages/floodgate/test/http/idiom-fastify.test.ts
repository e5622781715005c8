import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { floodgateFastify, RateLimitedError } from '../../src/http/adapters/fastify.js';
import { FloodgateError, fixedWindow, Limiter, ManualClock } from '../../src/index.js';

const perHour = (limit: number): Limiter =>
  new Limiter({ policy: fixedWindow({ limit, windowMs: 3_600_000 }), clock: new ManualClock(0) });

describe('Fastify in its own idiom', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  const listen = async (a: FastifyInstance): Promise<string> => {
    app = a;
    return a.listen({ port: 0, host: '127.0.0.1' });
  };

  it('logs through fastify.log, not the console', async () => {
    const lines: string[] = [];
    const a = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => void lines.push(line) } } });
    await a.register(floodgateFastify, { limiter: perHour(5) });
    a.get('/ok', async () => 'ok');
    const url = await listen(a);
    assert.equal((await fetch(`${url}/ok`, { headers: { 'x-forwarded-for': '192.0.2.1' } })).status, 200);
    const warned = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.msg.includes('x-forwarded-for'));
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.level, 40);
  });

  it("refuseWith 'error': setErrorHandler and onError receive a RateLimitedError (statusCode 429), the headers already set", async () => {
    const a = Fastify();
    const seen: unknown[] = [];
    await a.register(floodgateFastify, { limiter: perHour(1), refuseWith: 'error' });
    a.addHook('onError', (_request, _reply, err, done) => (seen.push(err), done()));
    a.setErrorHandler((err, _request, reply) => {
      if (err instanceof RateLimitedError)
        return reply.code(err.statusCode).send({ slowDown: err.retryAfterSeconds, code: err.code });
      return reply.code(500).send('other');
    });
    a.get('/ok', async () => 'ok');
    const url = await listen(a);
    assert.equal((await fetch(`${url}/ok`)).status, 200);
    const refused = await fetch(`${url}/ok`);
    assert.equal(refused.status, 429);
    assert.deepEqual(await refused.json(), { slowDown: 3600, code: 'FLOODGATE_RATE_LIMITED' });
    assert.equal(refused.headers.get('retry-after'), '3600');
    assert.equal(refused.headers.get('ratelimit'), '"default";r=0;t=3600');
    assert.equal(seen.length, 1);
    assert.ok(seen[0] instanceof RateLimitedError);
    assert.match((seen[0] as RateLimitedError).problem, /quota-exceeded/);
  });

  it("refuseWith 'error' without an error handler: Fastify's default answers 429", async () => {
    const a = Fastify();
    await a.register(floodgateFastify, { limiter: perHour(1), refuseWith: 'error' });
    a.get('/ok', async () => 'ok');
    const url = await listen(a);
    await fetch(`${url}/ok`);
    const refused = await fetch(`${url}/ok`);
    assert.equal(refused.status, 429);
    assert.equal(((await refused.json()) as { code: string }).code, 'FLOODGATE_RATE_LIMITED');
  });

  it('the default reply goes through the onSend hooks', async () => {
    const a = Fastify();
    const sent: number[] = [];
    await a.register(floodgateFastify, { limiter: perHour(1) });
    a.addHook('onSend', async (_request, reply, payload) => (sent.push(reply.statusCode), payload));
    a.get('/ok', async () => 'ok');
    const url = await listen(a);
    await fetch(`${url}/ok`);
    const refused = await fetch(`${url}/ok`);
    assert.equal(refused.status, 429);
    assert.match(refused.headers.get('content-type') ?? '', /problem\+json/);
    assert.deepEqual(sent, [200, 429]);
  });

  it("global: false limits only the routes whose config.rateLimit asks, each with the plugin's or its own limiter", async () => {
    const a = Fastify();
    await a.register(floodgateFastify, { global: false, limiter: perHour(1) });
    a.get('/free', async () => 'ok');
    a.get('/shared', { config: { rateLimit: true } }, async () => 'ok');
    a.get('/own', { config: { rateLimit: { limiter: perHour(2), name: 'own' } } }, async () => 'ok');
    const url = await listen(a);
    const statuses = async (path: string, n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await fetch(`${url}${path}`)).status);
      return out;
    };
    assert.deepEqual(await statuses('/free', 4), [200, 200, 200, 200]);
    assert.deepEqual(await statuses('/shared', 2), [200, 429]);
    assert.deepEqual(await statuses('/own', 3), [200, 200, 429]);
    assert.equal((await fetch(`${url}/free`)).headers.get('ratelimit'), null);
  });

  it('global: false without a plugin limiter: routes give their own; config.rateLimit: true is then refused naming the route', async () => {
    const a = Fastify();
    app = a;
    await a.register(floodgateFastify, { global: false });
    a.get('/own', { config: { rateLimit: { limiter: perHour(1) } } }, async () => 'ok');
    assert.throws(
      () => a.get('/x', { config: { rateLimit: true } }, async () => 'ok'),
      (err: unknown) =>
        err instanceof FloodgateError &&
        err.code === 'INVALID_OPTION' &&
        /^GET \/x: give either limiter/.test(err.message),
    );
  });

  it('a bad per-route config is refused when the route is registered, naming the route', async () => {
    const a = Fastify();
    app = a;
    await a.register(floodgateFastify, { limiter: perHour(1) });
    const bad = { dimensions: [{ name: 'a', limiter: 5 }] } as unknown as { dimensions: [] };
    assert.throws(
      () => a.get('/x', { config: { rateLimit: bad } }, async () => 'ok'),
      (err: unknown) =>
        err instanceof FloodgateError &&
        err.code === 'INVALID_OPTION' &&
        err.option === 'dimensions[0].limiter' &&
        /^GET \/x: dimensions\[0\]\.limiter must be a Limiter/.test(err.message),
    );
    assert.throws(
      () => a.post('/y', { config: { rateLimit: 'yes' } }, async () => 'ok'),
      /^FloodgateError: POST \/y: config\.rateLimit must be true, false or an object/,
    );
    assert.throws(
      () => a.get('/z', { config: { rateLimit: {}, floodgate: false } }, async () => 'ok'),
      /GET \/z: config\.rateLimit must be given alone/,
    );
  });

  it('bad plugin options fail register with INVALID_OPTION', async () => {
    for (const options of [{ limiter: perHour(1), global: 'no' }, { limiter: perHour(1), refuseWith: 'throw' }, {}]) {
      const a = Fastify();
      await assert.rejects(
        async () => {
          await a.register(floodgateFastify, options as never);
        },
        (err: unknown) => err instanceof FloodgateError && err.code === 'INVALID_OPTION',
      );
      await a.close();
    }
  });
});
