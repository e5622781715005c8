import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { floodgateHono } from '../../src/http/adapters/hono.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { close, listen, memoryLogger } from './support.js';

const limiter = (): Limiter => new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock: new ManualClock(0) });

function app(): Hono {
  const hono = new Hono();
  hono.use('*', floodgateHono({ limiter: limiter() }));
  hono.get('/text', (c) => c.text('text'));
  hono.get('/raw', () => new Response('raw', { headers: { 'x-own': 'yes' } }));
  hono.get('/own', (c) => {
    c.header('RateLimit', 'the app says');
    return c.text('own');
  });
  return hono;
}

describe('hono adapter: where the headers go', () => {
  const server = createAdaptorServer({ fetch: app().fetch }) as Parameters<typeof listen>[0];
  let url = '';
  before(async () => {
    url = await listen(server);
  });
  after(async () => close(server));

  it('under @hono/node-server, adds them to any Response, one the handler built itself included', async () => {
    for (const path of ['/text', '/raw']) {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit-policy'), '"default";q=5;w=60');
      assert.match(res.headers.get('ratelimit') ?? '', /^"default";r=\d;t=60$/);
      if (path === '/raw') assert.equal(res.headers.get('x-own'), 'yes');
      assert.equal(await res.text(), path.slice(1));
    }
  });

  it('lets a header the app sets itself win', async () => {
    const res = await fetch(`${url}/own`);
    assert.equal(res.headers.get('ratelimit'), 'the app says');
    assert.equal(res.headers.get('ratelimit-policy'), '"default";q=5;w=60');
  });

  it('sets them with c.header where there is no node response (app.request, other runtimes)', async () => {
    const res = await app().request('/text');
    assert.equal(res.headers.get('ratelimit'), '"default";r=4;t=60');
    assert.equal(res.headers.get('ratelimit-policy'), '"default";q=5;w=60');
  });
});

describe('hono adapter: untrusted forwarding headers', () => {
  const warned = async (fetchIt: (app: Hono) => Response | Promise<Response>): Promise<string[]> => {
    const logger = memoryLogger();
    const hono = new Hono();
    hono.use('*', floodgateHono({ limiter: limiter(), logger, remoteAddress: () => '192.0.2.1' }));
    hono.get('/text', (c) => c.text('text'));
    for (let i = 0; i < 2; i++) assert.equal((await fetchIt(hono)).status, 200);
    return logger.messages;
  };

  it('warns once where there is no node request (fetch Headers)', async () => {
    const messages = await warned((hono) => hono.request('/text', { headers: { Forwarded: 'for=198.51.100.1' } }));
    assert.equal(messages.length, 1);
    assert.match(messages[0]!, /"forwarded"/);
    assert.deepEqual(await warned((hono) => hono.request('/text')), []);
  });

  it('warns once under @hono/node-server, from node\'s raw header list', async () => {
    const logger = memoryLogger();
    const hono = new Hono();
    hono.use('*', floodgateHono({ limiter: limiter(), logger }));
    hono.get('/text', (c) => c.text('text'));
    const server = createAdaptorServer({ fetch: hono.fetch }) as Parameters<typeof listen>[0];
    const url = await listen(server);
    try {
      assert.equal((await fetch(`${url}/text`)).status, 200);
      assert.equal(logger.messages.length, 0);
      for (let i = 0; i < 2; i++) assert.equal((await fetch(`${url}/text`, { headers: { 'X-Forwarded-For': '198.51.100.1' } })).status, 200);
      assert.equal(logger.messages.length, 1);
      assert.match(logger.messages[0]!, /"x-forwarded-for"/);
    } finally {
      await close(server);
    }
  });
});
