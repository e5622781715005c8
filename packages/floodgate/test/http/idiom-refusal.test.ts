import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import Koa from 'koa';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { floodgateHono } from '../../src/http/adapters/hono.js';
import { floodgateKoa } from '../../src/http/adapters/koa.js';
import { floodgateNode } from '../../src/http/adapters/node.js';
import { HttpGate, type HttpRequest, type RateLimitInfo } from '../../src/http/index.js';
import { FloodgateError, fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { adapters, type Running } from './servers.js';
import { close, FakeView, listen, memoryLogger } from './support.js';

const onePerHour = (): Limiter =>
  new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 3_600_000 }), clock: new ManualClock(0) });

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name}: onLimit, message and statusCode`, () => {
    let app: Running | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    it('calls onLimit once per refusal with the request view and the decisions; message and statusCode shape the answer', async () => {
      const calls: { path: string; info: RateLimitInfo }[] = [];
      app = await start({
        limiter: onePerHour(),
        name: 'hourly',
        onLimit: (req, info) => void calls.push({ path: req.path, info }),
        message: { error: 'slow down' },
        statusCode: 503,
      });
      assert.equal((await fetch(`${app.url}/ok`)).status, 200);
      assert.equal(calls.length, 0);
      const refused = await fetch(`${app.url}/ok`);
      assert.equal(refused.status, 503);
      assert.deepEqual(await refused.json(), { error: 'slow down' });
      assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(refused.headers.get('retry-after'), '3600');
      assert.equal(calls.length, 1);
      assert.equal(calls[0]!.path, '/ok');
      assert.equal(calls[0]!.info.statusCode, 503);
      assert.deepEqual(
        calls[0]!.info.decisions.map((d) => [d.name, d.decision.reason, d.decision.retryAfterMs]),
        [['hourly', 'limit', 3_600_000]],
      );
    });

    it('an onLimit that throws is logged once and the refusal stands', async () => {
      const logger = memoryLogger();
      app = await start({
        limiter: onePerHour(),
        logger,
        onLimit: () => {
          throw new Error('metrics down');
        },
        message: 'Too many requests',
      });
      await fetch(`${app.url}/ok`);
      for (let i = 0; i < 2; i++) {
        const refused = await fetch(`${app.url}/ok`);
        assert.equal(refused.status, 429);
        assert.equal(await refused.text(), 'Too many requests');
      }
      assert.equal(logger.messages.filter((m) => m.includes('onLimit option threw')).length, 1);
    });
  });
}

describe('handler: the framework answers a refusal itself', () => {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });
  const serve = async (server: ReturnType<typeof createServer>): Promise<string> => {
    const url = await listen(server);
    stop = () => close(server);
    return url;
  };
  const twice = async (url: string): Promise<Response> => {
    await fetch(`${url}/ok`);
    return fetch(`${url}/ok`);
  };
  const expectCustom = async (res: Response, body: string): Promise<void> => {
    assert.equal(res.status, 429);
    assert.equal(await res.text(), body);
    assert.equal(res.headers.get('retry-after'), '3600');
    assert.equal(res.headers.get('ratelimit'), '"default";r=0;t=3600');
  };

  it('express: handler(req, res, next, info)', async () => {
    const app = express();
    app.use(
      floodgateExpress({
        limiter: onePerHour(),
        handler: (req, res, _next, info) =>
          void res.status(info.statusCode).send(`express ${req.path} ${info.decisions[0]!.decision.remaining}`),
      }),
    );
    app.get('/ok', (_req, res) => void res.send('ok'));
    await expectCustom(await twice(await serve(createServer(app))), 'express /ok 0');
  });

  it('node: handler(req, res, next, info); what it throws goes to next(err)', async () => {
    let failed: unknown;
    const limit = floodgateNode({
      limiter: onePerHour(),
      handler: (req: IncomingMessage, res, _next, info) => {
        if (req.url === '/boom') throw new Error('handler broke');
        res.statusCode = info.statusCode;
        res.end('node refused');
      },
    });
    const url = await serve(
      createServer((req, res) => limit(req, res, (err) => ((failed = err), res.end(err ? 'failed' : 'ok')))),
    );
    await expectCustom(await twice(url), 'node refused');
    assert.equal(await (await fetch(`${url}/boom`)).text(), 'failed');
    assert.match(String(failed), /handler broke/);
  });

  it('koa: handler(ctx, info)', async () => {
    const app = new Koa();
    app.use(
      floodgateKoa({ limiter: onePerHour(), handler: (ctx, info) => void (ctx.body = `koa ${info.statusCode}`) }),
    );
    app.use((ctx) => void (ctx.body = 'ok'));
    await expectCustom(await twice(await serve(createServer(app.callback()))), 'koa 429');
  });

  it('hono: handler(c, info) returns the Response', async () => {
    const app = new Hono();
    app.use(
      '*',
      floodgateHono({ limiter: onePerHour(), handler: (c, info) => c.text(`hono ${info.decisions.length}`, 429) }),
    );
    app.get('/ok', (c) => c.text('ok'));
    await expectCustom(
      await twice(await serve(createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>)),
      'hono 1',
    );
  });

  it('bad message, statusCode or handler: INVALID_OPTION naming it', () => {
    const bad: [object, string][] = [
      [{ statusCode: 200 }, 'statusCode'],
      [{ statusCode: 429.5 }, 'statusCode'],
      [{ message: 42 }, 'message'],
      [{ onLimit: 'log' }, 'onLimit'],
    ];
    for (const [options, option] of bad) {
      assert.throws(
        () => new HttpGate({ limiter: onePerHour(), ...options }),
        (err: unknown) => err instanceof FloodgateError && err.code === 'INVALID_OPTION' && err.option === option,
      );
    }
    assert.throws(
      () => floodgateExpress({ limiter: onePerHour(), handler: 'x' as never }),
      (err: unknown) => err instanceof FloodgateError && err.option === 'handler',
    );
  });

  it('the gate calls onLimit for a refusal, not for an admission or a 500', () => {
    const seen: number[] = [];
    const gate = new HttpGate<unknown>({
      limiter: onePerHour(),
      onLimit: (_req: HttpRequest<unknown>, info) => void seen.push(info.statusCode),
    });
    const view = new FakeView(gate.clientIp, {});
    gate.check(view);
    gate.check(view);
    const broken = new HttpGate<unknown>({
      limiter: onePerHour(),
      cost: () => -1,
      logger: memoryLogger(),
      onLimit: () => void seen.push(500),
    });
    broken.check(new FakeView(broken.clientIp, {}));
    assert.deepEqual(seen, [429]);
  });
});
