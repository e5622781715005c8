/**
 * One small app per framework behind its concurrency middleware on a loopback port, with the same
 * routes, whose handlers the test holds until it lets them go:
 * `/slow?tag=x` (200 once let go), `/stream` (a first chunk at once, the end once let go),
 * `/fail` (throws), `/timeout` (throws a TimeoutError), `/status/:code` (answers that status).
 * Each handler that starts writes its tag (or path) to `control.started`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { floodgateConcurrencyExpress } from '../../src/http/adapters/express.js';
import { floodgateConcurrencyFastify } from '../../src/http/adapters/fastify.js';
import { floodgateConcurrencyHono } from '../../src/http/adapters/hono.js';
import { floodgateConcurrencyKoa } from '../../src/http/adapters/koa.js';
import { floodgateConcurrencyNode } from '../../src/http/adapters/node.js';
import type { HttpConcurrencyOptions } from '../../src/http/index.js';
import {
  ConcurrencyLimiter,
  type Admission,
  type CallOutcome,
  type ConcurrencyAcquireOptions,
  type ConcurrencyLimiterOptions,
} from '../../src/index.js';
import type { Running } from './servers.js';
import { close, listen } from './support.js';

/** Control lets a test hold the handlers and see which started, in order. */
export class Control {
  readonly started: string[] = [];
  private letGo!: () => void;
  /** Resolves when the test lets the handlers go. */
  readonly held = new Promise<void>((resolve) => (this.letGo = resolve));

  /** release lets every held handler (and every later one) finish. */
  release(): void {
    this.letGo();
  }
}

/** RecordingLimiter is a real ConcurrencyLimiter that records each permit's outcome, and any error its release throws. */
export class RecordingLimiter extends ConcurrencyLimiter {
  readonly outcomes: CallOutcome[] = [];
  readonly releaseErrors: unknown[] = [];

  constructor(options: ConcurrencyLimiterOptions) {
    super(options);
  }

  override acquire(options?: ConcurrencyAcquireOptions): Admission | Promise<Admission> {
    const admission = super.acquire(options);
    return admission instanceof Promise ? admission.then((a) => this.watch(a)) : this.watch(admission);
  }

  private watch(admission: Admission): Admission {
    if (!admission.allowed) return admission;
    const release = admission.release.bind(admission);
    admission.release = (outcome: CallOutcome = 'success') => {
      this.outcomes.push(outcome);
      try {
        release(outcome);
      } catch (err) {
        this.releaseErrors.push(err);
        throw err;
      }
    };
    return admission;
  }
}

/** An adapter under test: starts its app behind the concurrency middleware made of `options`. */
export type StartOverload = (options: HttpConcurrencyOptions<unknown>, control: Control) => Promise<Running>;

/** The error a handler throws on `/timeout`, as `AbortSignal.timeout` would abort with. */
function timeoutError(): Error {
  return Object.assign(new Error('upstream timed out'), { name: 'TimeoutError' });
}

function queryTag(url: string | undefined, path: string): string {
  return new URL(url ?? '/', 'http://x').searchParams.get('tag') ?? path;
}

/** node:http's routes (Express's too: it answers on node's response). */
async function nodeRoutes(req: IncomingMessage, res: ServerResponse, control: Control): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  control.started.push(queryTag(req.url, path));
  if (path === '/fail') throw new Error('handler failed');
  if (path === '/timeout') throw timeoutError();
  const status = /^\/status\/(\d+)$/.exec(path);
  if (status) {
    res.statusCode = Number(status[1]);
    res.end();
    return;
  }
  if (path === '/stream') {
    res.write('first');
    await control.held;
    res.end('last');
    return;
  }
  await control.held;
  res.end('ok');
}

async function startServer(server: ReturnType<typeof createServer>): Promise<Running> {
  const url = await listen(server);
  return { url, close: () => close(server) };
}

/** A stream that sends a first chunk at once and ends when the test lets go. */
function heldStream(control: Control): PassThrough {
  const body = new PassThrough();
  body.write('first');
  void control.held.then(() => body.end('last'));
  return body;
}

/** The concurrency adapters, by name. */
export const overloadAdapters: Record<string, StartOverload> = {
  node: (options, control) => {
    const bulkhead = floodgateConcurrencyNode(options);
    const fail = (res: ServerResponse): void => {
      res.statusCode = 500;
      res.end();
    };
    return startServer(
      createServer((req, res) =>
        bulkhead(req, res, (err) => (err ? fail(res) : void nodeRoutes(req, res, control).catch(() => fail(res)))),
      ),
    );
  },
  express: (options, control) => {
    const app = express();
    app.use(floodgateConcurrencyExpress(options));
    app.use((req, res, next) => void nodeRoutes(req, res, control).catch(next));
    app.use(
      (_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(500).end(),
    );
    return startServer(createServer(app));
  },
  fastify: async (options, control) => {
    const app = Fastify();
    await app.register(floodgateConcurrencyFastify, options);
    app.get('/health', { config: { concurrency: false } }, async () => 'ok');
    app.get('/slow', async (request) => {
      control.started.push((request.query as { tag?: string }).tag ?? '/slow');
      await control.held;
      return 'ok';
    });
    app.get('/stream', async (_request, reply) => {
      control.started.push('/stream');
      return reply.send(heldStream(control));
    });
    app.get('/fail', async () => {
      control.started.push('/fail');
      throw new Error('handler failed');
    });
    app.get('/timeout', async () => {
      control.started.push('/timeout');
      throw timeoutError();
    });
    app.get('/status/:code', async (request, reply) => {
      control.started.push(request.url);
      return reply.code(Number((request.params as { code: string }).code)).send();
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },
  koa: (options, control) => {
    const app = new Koa();
    app.silent = true;
    app.use(floodgateConcurrencyKoa(options));
    app.use(async (ctx) => {
      control.started.push(typeof ctx.query['tag'] === 'string' ? ctx.query['tag'] : ctx.path);
      if (ctx.path === '/fail') throw new Error('handler failed');
      if (ctx.path === '/timeout') throw timeoutError();
      const status = /^\/status\/(\d+)$/.exec(ctx.path);
      if (status) {
        ctx.status = Number(status[1]);
        return;
      }
      if (ctx.path === '/stream') {
        ctx.body = heldStream(control);
        return;
      }
      await control.held;
      ctx.body = 'ok';
    });
    return startServer(createServer(app.callback()));
  },
  hono: (options, control) => {
    const app = new Hono();
    app.use('*', floodgateConcurrencyHono(options));
    app.get('/slow', async (c) => {
      control.started.push(c.req.query('tag') ?? '/slow');
      await control.held;
      return c.text('ok');
    });
    app.get('/stream', (c) => {
      control.started.push('/stream');
      let cancelled = false;
      const body = new ReadableStream<Uint8Array>({
        start(stream) {
          stream.enqueue(new TextEncoder().encode('first'));
          void control.held.then(() => cancelled || stream.close());
        },
        cancel: () => void (cancelled = true),
      });
      return c.body(body);
    });
    app.get('/fail', () => {
      control.started.push('/fail');
      throw new Error('handler failed');
    });
    app.get('/timeout', () => {
      control.started.push('/timeout');
      throw timeoutError();
    });
    app.get('/status/:code', (c) => {
      control.started.push(c.req.path);
      return c.body(null, Number(c.req.param('code')) as 503);
    });
    app.onError((_err, c) => c.text('failed', 500));
    return startServer(createAdaptorServer({ fetch: app.fetch }) as ReturnType<typeof createServer>);
  },
};

/** until resolves once `condition` holds, checking every few ms; it fails after `timeoutMs`. */
export async function until(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
