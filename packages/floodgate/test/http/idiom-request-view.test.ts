import assert from 'node:assert/strict';
import { createServer, IncomingMessage } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import express from 'express';
import { floodgateExpress } from '../../src/http/adapters/express.js';
import { byUser, type HttpRequest, type Identity } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { adapters, type Running } from './servers.js';
import { close, listen } from './support.js';

/** What each framework's own object is, reached through `raw`. */
const rawIs: Record<string, (raw: unknown) => boolean> = {
  node: (raw) => raw instanceof IncomingMessage,
  express: (raw) => raw instanceof IncomingMessage && typeof (raw as { app?: unknown }).app === 'function',
  fastify: (raw) => (raw as { raw?: unknown }).raw instanceof IncomingMessage && !(raw instanceof IncomingMessage),
  koa: (raw) =>
    (raw as { req?: unknown }).req instanceof IncomingMessage && typeof (raw as { state?: unknown }).state === 'object',
  hono: (raw) => (raw as { req?: { raw?: unknown } }).req?.raw instanceof Request,
};

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name}: one framework-neutral request view`, () => {
    let app: Running | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    it('hands identities, cost and skip the same view: method, path, ip, header(name), raw', async () => {
      const seen: { fn: string; req: HttpRequest<unknown> }[] = [];
      const fields: unknown[] = [];
      // One identity, written once, for every framework.
      const byTenant: Identity<unknown> = (req) => {
        seen.push({ fn: 'key', req });
        fields.push({
          method: req.method,
          path: req.path,
          ip: req.ip,
          tenant: req.header('x-tenant'),
          missing: req.header('x-none'),
        });
        return `tenant:${req.header('x-tenant') ?? 'none'}`;
      };
      app = await start({
        limiter: new Limiter({ policy: fixedWindow({ limit: 10, windowMs: 60_000 }), clock: new ManualClock(0) }),
        key: byTenant,
        cost: (req) => (seen.push({ fn: 'cost', req }), 1),
        skip: (req) => (seen.push({ fn: 'skip', req }), false),
      });
      const res = await fetch(`${app.url}/items/42?q=1`, { method: 'GET', headers: { 'X-Tenant': 'acme' } });
      assert.equal(res.status, 200);
      assert.deepEqual(fields, [
        { method: 'GET', path: '/items/42', ip: '127.0.0.1', tenant: 'acme', missing: undefined },
      ]);
      assert.deepEqual(seen.map((s) => s.fn).sort(), ['cost', 'key', 'skip']);
      assert.ok(
        seen.every((s) => s.req === seen[0]!.req),
        'one view per request',
      );
      assert.ok(rawIs[name]!(seen[0]!.req.raw), `raw is ${name}'s own object`);
      assert.equal(res.headers.get('ratelimit'), '"default";r=9;t=60');
    });
  });
}

describe('express: path under a mounted router', () => {
  it('is the path the client asked for; route is the pattern under its mount point', async () => {
    const seen: string[] = [];
    const router = express.Router();
    const limit = floodgateExpress({
      limiter: new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }) }),
      key: (req) => (seen.push(`${req.path} ${req.route}`), 'k'),
    });
    router.get('/items/:id', limit, (_req, res) => void res.send('ok'));
    const app = express();
    app.use('/api', router);
    const server = createServer(app);
    const url = await listen(server);
    try {
      assert.equal((await fetch(`${url}/api/items/7?x=1`)).status, 200);
      assert.deepEqual(seen, ['/api/items/7 /api/items/:id']);
    } finally {
      await close(server);
    }
  });
});

describe('byUser on every adapter', () => {
  for (const [name, start] of Object.entries(adapters)) {
    it(`${name}: byUser's function gets the raw object and the view`, async () => {
      const app = await start({
        limiter: new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), clock: new ManualClock(0) }),
        key: byUser((raw, req) => (rawIs[name]!(raw) ? req.header('x-user-id') : 'wrong')),
      });
      try {
        assert.equal((await fetch(`${app.url}/ok`, { headers: { 'x-user-id': 'a' } })).status, 200);
        assert.equal((await fetch(`${app.url}/ok`, { headers: { 'x-user-id': 'b' } })).status, 200);
        assert.equal((await fetch(`${app.url}/ok`, { headers: { 'x-user-id': 'a' } })).status, 429);
      } finally {
        await app.close();
      }
    });
  }
});
