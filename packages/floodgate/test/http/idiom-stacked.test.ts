import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { floodgateFastify } from '../../src/http/adapters/fastify.js';
import { floodgateHono } from '../../src/http/adapters/hono.js';
import { floodgateKoa } from '../../src/http/adapters/koa.js';
import { floodgateNode } from '../../src/http/adapters/node.js';
import type { HttpLimitOptions } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { close, listen } from './support.js';

const clock = (): ManualClock => new ManualClock(0);
/** The outer middleware: 10 a minute, named `app`. The inner: 1 a minute, named `route`. */
const outer = (): HttpLimitOptions<never> => ({
  name: 'app',
  limiter: new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), clock: clock() }),
});
const inner = (): HttpLimitOptions<never> => ({
  name: 'route',
  limiter: new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), clock: clock() }),
});

type Fetcher = { fetch: (path: string) => Promise<Response>; stop: () => Promise<void> };

const overNode = async (handler: Parameters<typeof createServer>[1]): Promise<Fetcher> => {
  const server = createServer(handler);
  const url = await listen(server);
  return { fetch: (path) => fetch(`${url}${path}`), stop: () => close(server) };
};

/** Each framework with two floodgate middlewares stacked on `/ok`. */
const stacks: Record<string, () => Promise<Fetcher>> = {
  node: () => {
    const a = floodgateNode(outer() as object);
    const b = floodgateNode(inner() as object);
    return overNode((req, res) => a(req, res, () => b(req, res, () => res.end('ok'))));
  },
  express: () => {
    const app = express();
    app.use(floodgateExpress(outer() as object));
    app.get('/ok', floodgateExpress(inner() as object), (_req, res) => void res.send('ok'));
    return overNode(app);
  },
  fastify: async () => {
    const app = Fastify();
    await app.register(floodgateFastify, outer() as object);
    await app.register(async (scope) => {
      await scope.register(floodgateFastify, inner() as object);
      scope.get('/ok', async () => 'ok');
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { fetch: (path) => fetch(`${url}${path}`), stop: () => app.close() };
  },
  koa: () => {
    const app = new Koa();
    app.use(floodgateKoa(outer() as object));
    app.use(floodgateKoa(inner() as object));
    app.use((ctx) => void (ctx.body = 'ok'));
    return overNode(app.callback());
  },
  'hono (node-server)': async () => {
    const app = new Hono();
    app.use('*', floodgateHono(outer() as object));
    app.use('/ok', floodgateHono(inner() as object));
    app.get('/ok', (c) => c.text('ok'));
    const server = createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>;
    const url = await listen(server);
    return { fetch: (path) => fetch(`${url}${path}`), stop: () => close(server) };
  },
  'hono (fetch, no node)': () => {
    const app = new Hono();
    app.use('*', floodgateHono({ ...(outer() as object), remoteAddress: () => '192.0.2.1' }));
    app.use('/ok', floodgateHono({ ...(inner() as object), remoteAddress: () => '192.0.2.1' }));
    app.get('/ok', (c) => c.text('ok'));
    return Promise.resolve({ fetch: async (path) => app.request(path), stop: () => Promise.resolve() });
  },
};

for (const [name, make] of Object.entries(stacks)) {
  describe(`${name}: stacked middlewares`, () => {
    it("keep both middlewares' RateLimit items, admitted and refused", async () => {
      const app = await make();
      try {
        const admitted = await app.fetch('/ok');
        assert.equal(admitted.status, 200);
        assert.equal(admitted.headers.get('ratelimit-policy'), '"app";q=10;w=60, "route";q=1;w=60');
        assert.equal(admitted.headers.get('ratelimit'), '"app";r=9;t=60, "route";r=0;t=60');
        const refused = await app.fetch('/ok');
        assert.equal(refused.status, 429);
        assert.equal(refused.headers.get('ratelimit'), '"app";r=8;t=60, "route";r=0;t=60');
        assert.equal(refused.headers.get('retry-after'), '60');
      } finally {
        await app.stop();
      }
    });
  });
}
