import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { floodgateHono } from '../../src/http/adapters/hono.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { close, listen, memoryLogger } from './support.js';

const limiter = (): Limiter =>
  new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock: new ManualClock(0) });

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

  it("warns once under @hono/node-server, from node's raw header list", async () => {
    const logger = memoryLogger();
    const hono = new Hono();
    hono.use('*', floodgateHono({ limiter: limiter(), logger }));
    hono.get('/text', (c) => c.text('text'));
    const server = createAdaptorServer({ fetch: hono.fetch }) as Parameters<typeof listen>[0];
    const url = await listen(server);
    try {
      assert.equal((await fetch(`${url}/text`)).status, 200);
      assert.equal(logger.messages.length, 0);
      for (let i = 0; i < 2; i++)
        assert.equal((await fetch(`${url}/text`, { headers: { 'X-Forwarded-For': '198.51.100.1' } })).status, 200);
      assert.equal(logger.messages.length, 1);
      assert.match(logger.messages[0]!, /"x-forwarded-for"/);
    } finally {
      await close(server);
    }
  });
});

describe('hono adapter: completed is truthful (issue 14)', () => {
  it('under @hono/node-server, reports an aborted request as not completed, so refundWhen gives its cost back', async () => {
    const clock = new ManualClock(0);
    const lim = new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }), clock });
    const outcomes: boolean[] = [];
    const hono = new Hono();
    hono.use('*', floodgateHono({ limiter: lim, refundWhen: (o) => (outcomes.push(o.completed), !o.completed) }));
    let entered: () => void = () => {};
    hono.get('/slow', async (c) => {
      entered();
      // Answers once node has seen the client go (bounded), not after a fixed delay that a loaded
      // machine may outlast before it reads the close: then the answer is written first and counts.
      const signal = c.req.raw.signal;
      await new Promise<void>((resolve) => {
        const bound = setTimeout(resolve, 5000);
        signal.addEventListener('abort', () => (clearTimeout(bound), resolve()), { once: true });
      });
      return c.text('late');
    });
    hono.get('/fast', (c) => c.text('fast'));
    const server = createAdaptorServer({ fetch: hono.fetch }) as Parameters<typeof listen>[0];
    const url = await listen(server);
    try {
      const aborts = 10;
      for (let i = 0; i < aborts; i++) {
        const controller = new AbortController();
        const inHandler = new Promise<void>((resolve) => (entered = resolve));
        const pending = fetch(`${url}/slow`, { signal: controller.signal }).catch(() => undefined);
        await inHandler;
        controller.abort();
        await pending;
      }
      const done = await fetch(`${url}/fast`);
      assert.equal(await done.text(), 'fast');
      // Every settle has run once its connection closed: wait for them, bounded (10 s: a loaded machine closes slowly).
      for (let i = 0; i < 500 && outcomes.length < aborts + 1; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(outcomes.filter((c) => !c).length, aborts);
      assert.equal(outcomes.filter((c) => c).length, 1);
      // The aborted requests were refunded: only the completed one still counts.
      assert.equal(lim.peekSync('default/ip:127.0.0.1', { cost: 0 }).remaining, 99);
    } finally {
      await close(server);
    }
  });

  it('elsewhere, reads the request signal: an aborted request is not completed', async () => {
    const outcomes: boolean[] = [];
    const hono = new Hono();
    hono.use(
      '*',
      floodgateHono({
        limiter: limiter(),
        remoteAddress: () => '192.0.2.1',
        refundWhen: (o) => (outcomes.push(o.completed), false),
      }),
    );
    const controller = new AbortController();
    hono.get('/t', (c) => {
      controller.abort();
      return c.text('t');
    });
    hono.get('/u', (c) => c.text('u'));
    await hono.request('/t', { signal: controller.signal });
    await hono.request('/u');
    assert.deepEqual(outcomes, [false, true]);
  });
});
