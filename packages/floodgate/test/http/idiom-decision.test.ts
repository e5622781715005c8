import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
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
import { floodgateNode, type WithRateLimit } from '../../src/http/adapters/node.js';
import type { HttpLimitOptions, RateLimitInfo } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, tokenBucket } from '../../src/index.js';
import { close, listen } from './support.js';

/** What a handler downstream reports of the decision attached to its request. */
function summary(info: RateLimitInfo | undefined): unknown {
  if (info === undefined) return 'none';
  return {
    allowed: info.allowed,
    statusCode: info.statusCode,
    decisions: info.decisions.map((d) => [d.name, d.decision.remaining, d.decision.limit, d.decision.reason]),
  };
}

type Serve = (options: HttpLimitOptions<never>) => Promise<{ url: string; stop: () => Promise<void> }>;

const onNode = async (
  handler: Parameters<typeof createServer>[1],
): Promise<{ url: string; stop: () => Promise<void> }> => {
  const server = createServer(handler);
  const url = await listen(server);
  return { url, stop: () => close(server) };
};

/** One app per framework whose handler answers with `summary` of the attached decision. */
const serve: Record<string, Serve> = {
  node: (options) => {
    const limit = floodgateNode(options as HttpLimitOptions<IncomingMessage>);
    return onNode((req, res) =>
      limit(req, res, () => res.end(JSON.stringify(summary((req as IncomingMessage & WithRateLimit).rateLimit)))),
    );
  },
  express: (options) => {
    const app = express();
    app.use(floodgateExpress(options as HttpLimitOptions<express.Request>));
    app.get('/ok', (req, res) => void res.json(summary(req.rateLimit)));
    return onNode(app);
  },
  fastify: async (options) => {
    const app = Fastify();
    await app.register(floodgateFastify, options as object);
    app.get('/ok', async (request) => summary(request.rateLimit));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, stop: () => app.close() };
  },
  koa: (options) => {
    const app = new Koa();
    app.use(floodgateKoa(options as HttpLimitOptions<Koa.Context>));
    app.use((ctx) => void (ctx.body = summary(ctx.state.rateLimit)));
    return onNode(app.callback());
  },
  hono: async (options) => {
    const app = new Hono();
    app.use('*', floodgateHono(options as object));
    app.get('/ok', (c) => c.json(summary(c.get('rateLimit'))));
    const server = createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>;
    const url = await listen(server);
    return { url, stop: () => close(server) };
  },
};

for (const [name, start] of Object.entries(serve)) {
  describe(`${name}: the decision attached to the request`, () => {
    it("carries each dimension's decision, typed, to the handler", async () => {
      const clock = new ManualClock(0);
      const app = await start({
        dimensions: [
          { name: 'burst', limiter: new Limiter({ policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }), clock }) },
          { name: 'hourly', limiter: new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 3_600_000 }), clock }) },
        ],
      });
      try {
        await fetch(`${app.url}/ok`);
        const body = await (await fetch(`${app.url}/ok`)).json();
        assert.deepEqual(body, {
          allowed: true,
          statusCode: 0,
          decisions: [
            ['burst', 3, 5, 'ok'],
            ['hourly', 98, 100, 'ok'],
          ],
        });
      } finally {
        await app.stop();
      }
    });

    it('one dimension: each request sees its own remaining, also when the headers are reused', async () => {
      const app = await start({
        limiter: new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 60_000 }), clock: new ManualClock(0) }),
      });
      try {
        const seen: unknown[] = [];
        for (let i = 0; i < 3; i++) seen.push(await (await fetch(`${app.url}/ok`)).json());
        assert.deepEqual(
          seen.map((b) => (b as { decisions: unknown[][] }).decisions[0]![1]),
          [2, 1, 0],
        );
      } finally {
        await app.stop();
      }
    });

    it('a skipped request carries no decisions', async () => {
      const app = await start({
        limiter: new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 60_000 }) }),
        skip: () => true,
      });
      try {
        assert.deepEqual(await (await fetch(`${app.url}/ok`)).json(), { allowed: true, statusCode: 0, decisions: [] });
      } finally {
        await app.stop();
      }
    });
  });
}
