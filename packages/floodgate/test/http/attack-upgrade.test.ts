import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, it } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { floodgateFastify } from '../../src/http/adapters/fastify.js';
import { floodgateKoa } from '../../src/http/adapters/koa.js';
import { floodgateNode, floodgateUpgrade, type UpgradeListener } from '../../src/http/adapters/node.js';
import type { HttpLimitOptions } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { close, listen, memoryLogger } from './support.js';

/** The app's own WebSocket endpoint, reduced to its handshake: 101, then the socket is ours. */
const accept: UpgradeListener = (_req, socket) => {
  socket.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
};

/** Sends an upgrade request and resolves to the status it got (101, or a refusal's). */
function upgrade(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/ws`, { headers: { connection: 'Upgrade', upgrade: 'websocket' } });
    req.on('upgrade', (res: IncomingMessage, socket: Duplex) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

interface UpgradeApp {
  server: Server;
  /** Closes anything else the app holds. */
  stop?: () => Promise<void>;
}

type Build = (options: HttpLimitOptions<unknown>, withListener: boolean) => Promise<UpgradeApp>;

const plain = (_req: IncomingMessage, res: ServerResponse): void => void res.end('ok');

/** Each node-based adapter, with its app and (when asked) a guarded upgrade listener. */
const builds: Record<string, Build> = {
  node: async (options, withListener) => {
    const limit = floodgateNode(options);
    const server = createServer((req, res) => limit(req, res, () => plain(req, res)));
    if (withListener) server.on('upgrade', limit.upgrade(accept));
    return { server };
  },
  express: async (options, withListener) => {
    const app = express();
    const limit = floodgateExpress(options);
    app.use(limit);
    app.get('/ws', (_req, res) => void res.send('ok'));
    const server = createServer(app);
    if (withListener) server.on('upgrade', limit.upgrade(accept));
    return { server };
  },
  koa: async (options, withListener) => {
    const app = new Koa();
    const limit = floodgateKoa(options);
    app.use(limit);
    app.use((ctx) => void (ctx.body = 'ok'));
    const server = createServer(app.callback());
    if (withListener) server.on('upgrade', limit.upgrade(accept));
    return { server };
  },
  fastify: async (options, withListener) => {
    const app = Fastify();
    await app.register(floodgateFastify, options);
    app.get('/ws', async () => 'ok');
    await app.ready();
    if (withListener) app.server.on('upgrade', floodgateUpgrade(options)(accept));
    return { server: app.server, stop: () => app.close() };
  },
};

describe('attack: WebSocket upgrades past the limiter (issue 14)', () => {
  let running: { app: UpgradeApp; started: boolean } | undefined;
  afterEach(async () => {
    if (running?.app.stop !== undefined) await running.app.stop();
    else if (running?.started) await close(running.app.server);
    running = undefined;
  });

  const start = async (build: Build, limiter: Limiter, withListener: boolean): Promise<string> => {
    const app = await build({ limiter, logger: memoryLogger() }, withListener);
    running = { app, started: false };
    if (app.stop !== undefined) {
      await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    }
    running.started = true;
    return listen(app.server);
  };

  for (const [name, build] of Object.entries(builds)) {
    it(`${name}: a guarded upgrade listener admits the limit and refuses the rest with 429, sharing the key with plain requests`, async () => {
      const limiter = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 60_000 }), clock: new ManualClock(0) });
      const url = await start(build, limiter, true);
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push(await upgrade(url));
      assert.deepEqual(statuses, [101, 101, 101, 429, 429, 429, 429, 429]);
      const res = await fetch(`${url}/ws`);
      assert.equal(res.status, 429);
      await res.arrayBuffer();
    });

    it(`${name}: without an upgrade listener, upgrade requests reach the middleware and are limited`, async () => {
      const limiter = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 60_000 }), clock: new ManualClock(0) });
      const url = await start(build, limiter, false);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push(await upgrade(url));
      assert.deepEqual(statuses, [200, 200, 429, 429]);
    });
  }
});

describe('HEAD and CORS preflights', () => {
  let server: Server | undefined;
  afterEach(async () => {
    if (server !== undefined) await close(server);
    server = undefined;
  });
  const preflight = {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'PUT' },
  };

  it('limits HEAD and preflights like any request by default', async () => {
    const limit = floodgateNode({
      limiter: new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 60_000 }), clock: new ManualClock(0) }),
    });
    server = createServer((req, res) => limit(req, res, () => plain(req, res)));
    const url = await listen(server);
    assert.equal((await fetch(url, { method: 'HEAD' })).status, 200);
    assert.equal((await fetch(url, preflight)).status, 200);
    assert.equal((await fetch(url, { method: 'HEAD' })).status, 429);
  });

  it('passes preflights untouched with exemptPreflight, and nothing else', async () => {
    const limit = floodgateNode({
      limiter: new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), clock: new ManualClock(0) }),
      exemptPreflight: true,
    });
    server = createServer((req, res) => limit(req, res, () => plain(req, res)));
    const url = await listen(server);
    for (let i = 0; i < 5; i++) {
      const res = await fetch(url, preflight);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit'), null);
    }
    assert.equal((await fetch(url, { method: 'OPTIONS' })).status, 200); // no Origin: not a preflight, and charged
    assert.equal((await fetch(url, { method: 'OPTIONS', headers: { origin: 'https://app.example' } })).status, 429);
  });

  it('refuses a non-boolean exemptPreflight', () => {
    assert.throws(
      () =>
        floodgateNode({
          limiter: new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 1000 }) }),
          exemptPreflight: 'yes' as unknown as boolean,
        }),
      /exemptPreflight/,
    );
  });
});
