/**
 * Each framework's own idiom of the concurrency middleware: factories that refuse bad options when
 * made, one limiter shared by several routes, Fastify's route config and plugin errors, and Hono
 * off @hono/node-server (plain `app.fetch`), where a permit is held until `next()` returns.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { floodgateConcurrencyExpress } from '../../src/http/adapters/express.js';
import { floodgateConcurrencyFastify } from '../../src/http/adapters/fastify.js';
import { floodgateConcurrencyHono } from '../../src/http/adapters/hono.js';
import { floodgateConcurrencyKoa } from '../../src/http/adapters/koa.js';
import { floodgateConcurrencyNode } from '../../src/http/adapters/node.js';
import { ConcurrencyLimiter, FloodgateError } from '../../src/index.js';
import { Control, until } from './overload-servers.js';
import { close, listen } from './support.js';

const factories = {
  floodgateConcurrencyNode,
  floodgateConcurrencyExpress,
  floodgateConcurrencyKoa,
  floodgateConcurrencyHono,
};

const invalid = (option: string) => (err: unknown) =>
  err instanceof FloodgateError && err.code === 'INVALID_OPTION' && err.option === option;

describe('the concurrency factories', () => {
  for (const [name, make] of Object.entries(factories)) {
    it(`${name} refuses bad options when made, naming the option`, () => {
      assert.throws(() => make({}), invalid('limit'));
      assert.throws(() => make({ limit: 2, statusCode: 502 as 503 }), invalid('statusCode'));
      assert.throws(() => make({ limit: 2, maxWaitMs: -1 }), invalid('maxWaitMs'));
      assert.throws(() => make({ limiter: new ConcurrencyLimiter({ limit: 1 }), tiers: 2 }), invalid('tiers'));
    });

    it(`${name} carries its limiter, and close() stops the event-loop sampling`, () => {
      const middleware = make({ adaptive: { initialLimit: 7 }, eventLoopDelay: { maxMs: 100 } });
      assert.equal(typeof middleware, 'function');
      assert.equal(middleware.limiter.limit, 7);
      middleware.close();
      middleware.close();
    });
  }
});

describe('one limiter for several routes (Express)', () => {
  it('shares its slots between the middlewares given it', async () => {
    const control = new Control();
    const shared = new ConcurrencyLimiter({ limit: 1 });
    const app = express();
    const held = async (_req: express.Request, res: express.Response): Promise<void> => {
      control.started.push(_req.path);
      await control.held;
      res.send('ok');
    };
    app.get('/reports', floodgateConcurrencyExpress({ limiter: shared }), (req, res) => void held(req, res));
    app.get('/exports', floodgateConcurrencyExpress({ limiter: shared }), (req, res) => void held(req, res));
    app.get('/free', (_req, res) => void res.send('free'));
    const server = createServer(app);
    const url = await listen(server);
    try {
      const report = fetch(`${url}/reports`);
      await until(() => shared.inFlight === 1, 'the report holds the slot');
      assert.equal((await fetch(`${url}/exports`)).status, 503);
      assert.equal((await fetch(`${url}/free`)).status, 200);
      control.release();
      assert.equal((await report).status, 200);
      await until(() => shared.inFlight === 0, 'the slot is free');
      assert.deepEqual(control.started, ['/reports']);
    } finally {
      control.release();
      await close(server);
    }
  });
});

describe('the Fastify plugin', () => {
  it('leaves out a route whose config.concurrency is false, and gives a route its own tier', async () => {
    const control = new Control();
    const limiter = new ConcurrencyLimiter({ limit: 1, tiers: 2, maxQueue: 5, maxWaitMs: 10_000 });
    const app = Fastify();
    await app.register(floodgateConcurrencyFastify, { limiter });
    const held = (tag: string) => async (): Promise<string> => {
      control.started.push(tag);
      await control.held;
      return tag;
    };
    app.get('/health', { config: { concurrency: false } }, async () => 'ok');
    app.get('/batch', held('batch'));
    app.get('/checkout', { config: { concurrency: { tier: 0 } } }, held('checkout'));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const first = fetch(`${url}/batch`);
      await until(() => control.started.length === 1, 'the first batch runs');
      assert.equal((await fetch(`${url}/health`)).status, 200);
      const batch = fetch(`${url}/batch`);
      await until(() => limiter.queued === 1, 'a batch request waits');
      const checkout = fetch(`${url}/checkout`);
      await until(() => limiter.queued === 2, 'the checkout waits');
      control.release();
      assert.deepEqual(await Promise.all([first, batch, checkout].map(async (r) => (await r).status)), [200, 200, 200]);
      assert.deepEqual(control.started, ['batch', 'checkout', 'batch']);
      await until(() => limiter.inFlight === 0, 'no request in flight');
    } finally {
      control.release();
      await app.close();
    }
  });

  it('fails register with INVALID_OPTION for bad plugin options', async () => {
    const app = Fastify();
    await assert.rejects(async () => {
      await app.register(floodgateConcurrencyFastify, { limit: 2, tierHeader: 'x priority' });
      await app.ready();
    }, invalid('tierHeader'));
    await app.close().catch(() => {});
  });

  it('refuses a bad config.concurrency when the route is registered, naming the route', async () => {
    const app = Fastify();
    await app.register(floodgateConcurrencyFastify, { limit: 2 });
    assert.throws(
      () => app.get('/x', { config: { concurrency: { tier: -1 } } }, async () => 'x'),
      (err: unknown) =>
        invalid('config.concurrency')(err) && /^GET \/x: config\.concurrency must be/.test((err as Error).message),
    );
    await app.close();
  });
});

describe('the Hono middleware off @hono/node-server', () => {
  it('holds the permit until next() returns, sheds with a Response, and ends a wait when the request is aborted', async () => {
    const control = new Control();
    const app = new Hono();
    const bulkhead = floodgateConcurrencyHono({ limit: 1, maxQueue: 1, maxWaitMs: 10_000 });
    app.use('*', bulkhead);
    app.get('/slow', async (c) => {
      control.started.push('slow');
      await control.held;
      return c.text('ok');
    });
    const first = app.fetch(new Request('http://x/slow'));
    await until(() => control.started.length === 1, 'the first handler runs');
    const leaving = new AbortController();
    const waiting = app.fetch(new Request('http://x/slow', { signal: leaving.signal }));
    await until(() => bulkhead.limiter.queued === 1, 'the second waits');
    const shed = await app.fetch(new Request('http://x/slow'));
    assert.equal(shed.status, 503);
    assert.equal(shed.headers.get('retry-after'), '1');
    leaving.abort();
    assert.equal((await waiting).status, 503);
    control.release();
    assert.equal(await (await first).text(), 'ok');
    assert.equal(bulkhead.limiter.inFlight, 0);
    assert.deepEqual(control.started, ['slow']);
  });
});
