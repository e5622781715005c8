import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { Board } from '../../src/dashboard/board.js';
import { DashboardEndpoints } from '../../src/dashboard/http.js';
import { keyShower } from '../../src/dashboard/keys.js';
import type { DashboardSource } from '../../src/dashboard/view.js';
import { tokenDigest } from '../../src/process/admin.js';

const TOKEN = 'dashboard-token-for-the-tests-0123';
const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('dashboard endpoints (a real HTTP server and client)', () => {
  const board = new Board();
  const source: DashboardSource = {
    board,
    rules: () => [{ route: 'api', rule: 'per-ip', mode: 'enforce', policy: '"per-ip";q=2;w=60' }],
    activeConfig: () => ({ file: 'floodgate.yaml', loadedAt: '2026-01-01T00:00:00.000Z', config: { routes: [] } }),
    isReady: () => true,
    routes: () => ['api'],
    process: { host: 'gw-1', pid: 4242, port: 8080, adminPort: 9090 },
    storeKind: 'memory',
    showKey: keyShower('full'),
  };
  const endpoints = new DashboardEndpoints({ source, tokenDigest: tokenDigest(TOKEN), intervalMs: 100, maxStreams: 1 });
  let server: Server;
  let base = '';

  before(async () => {
    server = createServer((req, res) => endpoints.serve(req, res, new URL(req.url ?? '/', 'http://x').pathname));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    endpoints.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = async (path: string, authorization?: string, method: 'GET' | 'POST' = 'GET') => {
    const res = await request(base + path, { method, headers: authorization === undefined ? {} : { authorization } });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };

  it('refuses without the token, or with a wrong one, asking for Basic (so a browser prompts) or Bearer', async () => {
    for (const auth of [
      undefined,
      'Bearer wrong-token',
      basic('admin', 'wrong'),
      basic('admin', ''),
      'Basic !!!',
      `Token ${TOKEN}`,
    ]) {
      const res = await get('/dashboard', auth);
      assert.equal(res.status, 401, String(auth));
      assert.deepEqual(res.headers['www-authenticate'], [
        'Basic realm="floodgate dashboard", charset="UTF-8"',
        'Bearer realm="floodgate-admin"',
      ]);
      assert.ok(!res.body.includes('<table'), 'nothing of the dashboard leaks');
    }
    assert.equal((await get('/dashboard/events')).status, 401);
    assert.equal((await get('/dashboard/snapshot.json')).status, 401);
  });

  it('serves the page with the token as a bearer token or as the Basic password, under a strict CSP', async () => {
    board.outcome('api', 'per-ip', 'limited');
    for (const auth of [`Bearer ${TOKEN}`, basic('anyone', TOKEN), basic('', TOKEN)]) {
      const res = await get('/dashboard', auth);
      assert.equal(res.status, 200, auth);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.match(
        String(res.headers['content-security-policy']),
        /default-src 'none'; style-src 'nonce-[^']+'; script-src 'nonce-[^']+'; connect-src 'self'/,
      );
      assert.match(res.body, /<span class="total-limited">1<\/span>/);
    }
    assert.equal((await get('/dashboard', `Bearer ${TOKEN}`, 'POST')).status, 405);
    assert.equal((await get('/dashboard/nothing', `Bearer ${TOKEN}`)).status, 404);
    const json = JSON.parse((await get('/dashboard/snapshot.json', `Bearer ${TOKEN}`)).body) as {
      rules: { rates: { limited: { total: number } } }[];
    };
    assert.equal(json.rules[0]!.rates.limited.total, 1);
  });

  it('streams a snapshot at once and then one per interval, each with the latest numbers; one stream too many is 503', async () => {
    const res = await request(`${base}/dashboard/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal((await get('/dashboard/events', `Bearer ${TOKEN}`)).status, 503, 'maxStreams is 1');
    const totals: number[] = [];
    let text = '';
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        const data = /^data: (.*)$/m.exec(event);
        if (data === null) continue;
        assert.match(event, /^event: snapshot$/m);
        const update = JSON.parse(data[1]!) as { live: string; loadedAt: string; config: string };
        totals.push(Number(/total-limited">(\d+)</.exec(update.live)![1]));
        board.outcome('api', 'per-ip', 'limited');
      }
      if (totals.length >= 3) break;
    }
    res.body.destroy();
    assert.ok(totals[2]! > totals[0]!, `the live numbers move: ${totals.join(', ')}`);
  });

  it('ends its streams on close', async () => {
    // The previous stream's end reaches the server a moment after the client dropped it (maxStreams is 1).
    let res = await request(`${base}/dashboard/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    for (let tries = 0; res.statusCode === 503 && tries < 40; tries++) {
      await res.body.text();
      await new Promise((r) => setTimeout(r, 50));
      res = await request(`${base}/dashboard/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    }
    assert.equal(res.statusCode, 200);
    const ended = res.body.text();
    endpoints.close();
    const body = await ended;
    assert.match(body, /^retry: 2000\n\nevent: snapshot\n/);
  });
});

describe('dashboard endpoints when a snapshot fails', () => {
  it('answers 500 (through the admin handler) and never throws from its timer', async () => {
    let broken = false;
    const source: DashboardSource = {
      board: new Board(),
      rules: () => {
        if (broken) throw new Error('broken source');
        return [];
      },
      activeConfig: () => ({ file: 'x', loadedAt: '', config: {} }),
      isReady: () => true,
      routes: () => ['api'],
      process: { host: 'gw-1', pid: 4242, port: 8080, adminPort: 9090 },
      storeKind: 'memory',
      showKey: keyShower('full'),
    };
    const endpoints = new DashboardEndpoints({ source, tokenDigest: tokenDigest(TOKEN), intervalMs: 20 });
    const server = createServer((req, res) => {
      try {
        endpoints.serve(req, res, new URL(req.url ?? '/', 'http://x').pathname);
      } catch {
        res.writeHead(500).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const stream = await request(`${base}/dashboard/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(stream.statusCode, 200);
      broken = true;
      await assert.rejects(stream.body.text(), 'the stream is ended, the process lives on');
      const again = await request(`${base}/dashboard/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
      await again.body.text();
      assert.equal(again.statusCode, 500);
    } finally {
      endpoints.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
