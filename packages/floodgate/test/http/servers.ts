/**
 * One small app per framework, each behind its floodgate adapter on a loopback port, with the
 * same routes: `/ok` (200), `/fail` (500 thrown by the handler) and `/items/:id` (200).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { floodgateFastify, type FloodgateRouteConfig } from '../../src/http/adapters/fastify.js';
import { floodgateHono } from '../../src/http/adapters/hono.js';
import { floodgateKoa } from '../../src/http/adapters/koa.js';
import { floodgateNode } from '../../src/http/adapters/node.js';
import type { HttpLimitOptions } from '../../src/http/index.js';
import { close, listen } from './support.js';

/** Running is a started app: its base URL and how to stop it. */
export interface Running {
  url: string;
  close(): Promise<void>;
}

/** Extra per-route settings, for the Fastify plugin's route config. */
export interface RouteConfigs {
  [path: string]: FloodgateRouteConfig;
}

/** An adapter under test: starts its app with the given (framework-neutral) options. */
export type Start = (options: HttpLimitOptions<unknown>, routes?: RouteConfigs) => Promise<Running>;

const itemPattern = /^\/items\/([^/?]+)/;

function nodeHandler(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path === '/fail') throw new Error('handler failed');
  res.statusCode = path === '/ok' || itemPattern.test(path) ? 200 : 404;
  res.end('ok');
}

async function startServer(server: ReturnType<typeof createServer>): Promise<Running> {
  const url = await listen(server);
  return { url, close: () => close(server) };
}

/** The adapters, by name. */
export const adapters: Record<string, Start> = {
  node: (options) => {
    const limit = floodgateNode(options);
    return startServer(
      createServer((req, res) =>
        limit(req, res, (err) => {
          try {
            if (err) throw err;
            nodeHandler(req, res);
          } catch {
            res.statusCode = 500;
            res.end();
          }
        }),
      ),
    );
  },
  express: (options) => {
    const app = express();
    app.use(floodgateExpress(options));
    app.get('/ok', (_req, res) => void res.send('ok'));
    app.get('/fail', () => {
      throw new Error('handler failed');
    });
    app.get('/items/:id', (_req, res) => void res.send('ok'));
    app.use(
      (_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(500).end(),
    );
    return startServer(createServer(app));
  },
  fastify: async (options, routes = {}) => {
    const app = Fastify();
    await app.register(floodgateFastify, options);
    const config = (path: string): { config: { floodgate: FloodgateRouteConfig } } | object =>
      path in routes ? { config: { floodgate: routes[path]! } } : {};
    app.get('/ok', config('/ok'), async () => 'ok');
    app.get('/fail', config('/fail'), async () => {
      throw new Error('handler failed');
    });
    app.get('/items/:id', config('/items/:id'), async () => 'ok');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },
  koa: (options) => {
    const app = new Koa();
    app.silent = true;
    app.use(floodgateKoa(options));
    app.use((ctx) => {
      if (ctx.path === '/fail') throw new Error('handler failed');
      ctx.status = ctx.path === '/ok' || itemPattern.test(ctx.path) ? 200 : 404;
      ctx.body = 'ok';
    });
    return startServer(createServer(app.callback()));
  },
  hono: (options) => {
    const app = new Hono();
    app.use('*', floodgateHono(options));
    app.get('/ok', (c) => c.text('ok'));
    app.get('/fail', () => {
      throw new Error('handler failed');
    });
    app.get('/items/:id', (c) => c.text('ok'));
    app.onError((_err, c) => c.text('failed', 500));
    return startServer(createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>);
  },
};
