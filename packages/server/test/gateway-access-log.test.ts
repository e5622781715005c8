/**
 * The access log, against gateway processes with a real upstream: one line per exchange, written
 * when it ends, saying its route, rules, decision, status and upstream status, with the client's
 * key hashed and no query string; a sampled log writes a share of the lines while metrics count
 * every exchange; a file destination gets the lines; off, there are none.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayProcess, type LogLine } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { closedPort } from './support/ports.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

const API_KEY = 'sk_live_access_log_secret_42';

function config(upstream: string, deadPort: number, accessLog: string): string {
  return `
accessLog: ${accessLog}
keys: { secret: "a-deployment-secret-for-the-access-log" }
limits: { maxBodyBytes: 1024 }
routes:
  - name: api
    match: { path: /api/* }
    upstream: ${upstream}
    rules:
      - name: per-key
        policy: { algorithm: tokenBucket, capacity: 3, refillPerSecond: 0.00001 }
        key: { type: header, name: x-api-key }
  - name: open
    match: { path: /open/* }
    upstream: ${upstream}
  - name: own
    match: { path: /status/* }
    upstream: ${upstream}
  - name: held
    match: { path: /hold/* }
    upstream: ${upstream}
  - name: dead
    match: { path: /dead/* }
    upstream: http://127.0.0.1:${deadPort}
`;
}

const accessLines = (gw: GatewayProcess, from = 0): LogLine[] => gw.logs.slice(from).filter((l) => l.msg === 'access');

/** Waits until the gateway has written `n` access lines since `from` (a line is written when its exchange closes). */
async function lines(gw: GatewayProcess, n: number, from: number): Promise<LogLine[]> {
  const deadline = performance.now() + 10_000;
  while (accessLines(gw, from).length < n && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return accessLines(gw, from);
}

describe('the access log', () => {
  let upstream: TestUpstream;
  const running: GatewayProcess[] = [];
  let deadPort: number;

  before(async () => {
    upstream = await startUpstream();
    deadPort = await closedPort();
  });
  after(async () => {
    await Promise.all(running.map((gw) => gw.stop()));
    await upstream?.close();
  });
  const start = async (accessLog: string): Promise<GatewayProcess> => {
    const gw = await startGateway(config(upstream.origin, deadPort, accessLog));
    running.push(gw);
    await gw.waitForLog('ready');
    return gw;
  };

  it('writes one line per exchange: route, rules, decision, status, upstream status, hashed key, no query', async () => {
    const gw = await start('{ enabled: true }');
    const key = { headers: { 'x-api-key': API_KEY } };
    const from = gw.logs.length;
    assert.equal((await call(gw.url('/api//a/./b?token=abc'), key)).status, 200);
    assert.equal((await call(gw.url('/status/502'))).status, 502);
    assert.equal((await call(gw.url('/dead/x'))).status, 502);
    assert.equal((await call(gw.url('/open/x'), { method: 'POST', body: Buffer.alloc(4096) })).status, 413);
    assert.equal((await call(gw.url('/nowhere'))).status, 404);
    for (let i = 0; i < 3; i++) await call(gw.url('/api/x'), key);
    const got = await lines(gw, 8, from);
    assert.equal(got.length, 8);
    const [admitted, own502, dead, tooLarge, unmatched, , , refused] = got as [
      LogLine,
      LogLine,
      LogLine,
      LogLine,
      LogLine,
      LogLine,
      LogLine,
      LogLine,
    ];

    assert.equal(admitted.method, 'GET');
    assert.equal(admitted.path, '/api/a/b', 'the normal form, without the query');
    assert.equal(admitted.route, 'api');
    assert.deepEqual(admitted.rules, ['per-key']);
    assert.equal(admitted.decision, 'admitted');
    assert.equal(admitted.status, 200);
    assert.equal(admitted.upstreamStatus, 200);
    assert.equal(typeof admitted.durationMs, 'number');
    assert.match(String(admitted.key), /^api\/per-key\/header:x-api-key:#[A-Za-z0-9_-]{22}$/);
    assert.ok((admitted.bytesOut as number) > 0);

    assert.deepEqual([own502.decision, own502.status, own502.upstreamStatus], ['admitted', 502, 502]);
    assert.deepEqual([dead.decision, dead.status, dead.upstreamStatus], ['upstream-failed', 502, undefined]);
    assert.deepEqual([tooLarge.decision, tooLarge.status], ['too-large', 413]);
    assert.deepEqual([unmatched.decision, unmatched.status, unmatched.route], ['unmatched', 404, undefined]);
    assert.deepEqual([refused.decision, refused.status, refused.rules], ['refused', 429, ['per-key']]);
    assert.equal(refused.key, admitted.key);

    const text = JSON.stringify(got);
    assert.ok(!text.includes(API_KEY) && !text.includes('token=abc'), 'no raw key, no query string');
  });

  it('says client-left for a client that leaves before its answer', async () => {
    const gw = await start('{ enabled: true }');
    const from = gw.logs.length;
    await new Promise<void>((resolve) => {
      const req = request(gw.url('/hold/left'), { agent: false });
      req.on('error', () => resolve());
      req.end();
      const poll = setInterval(() => {
        if (!upstream.received.some((r) => r.url === '/hold/left')) return;
        clearInterval(poll);
        req.destroy();
      }, 10);
    });
    const [line] = await lines(gw, 1, from);
    assert.deepEqual([line?.decision, line?.status, line?.route], ['client-left', 499, 'held']);
  });

  it('sampled, writes a share of the lines while metrics count every exchange', async () => {
    const gw = await start('{ sample: 0.5 }');
    const from = gw.logs.length;
    for (let i = 0; i < 200; i++) await call(gw.url('/open/x'));
    // The last line (if sampled) is written as its exchange closes: wait until the metrics have all 200, then for lines to stop.
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    assert.equal(metricValue(metrics, 'floodgate_responses_total', { route: 'open', status: '200' }), 200);
    await new Promise((r) => setTimeout(r, 200));
    const n = accessLines(gw, from).length;
    // Binomial(200, 0.5): outside 1..199 with probability 2^-199.
    assert.ok(n > 0 && n < 200, `${n} of 200 lines`);
  });

  it('writes to a file, and nothing when off', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-access-'));
    try {
      const file = join(dir, 'logs', 'access.log');
      const gw = await start(`{ destination: "${file}" }`);
      for (let i = 0; i < 3; i++) await call(gw.url('/open/x'));
      assert.equal(await gw.stop(), 0);
      const written = (await readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as LogLine);
      assert.deepEqual(
        written.map((l) => [l.msg, l.route, l.status]),
        [
          ['access', 'open', 200],
          ['access', 'open', 200],
          ['access', 'open', 200],
        ],
      );
      assert.equal(accessLines(gw).length, 0, 'nothing on stdout');

      const off = await start('{ enabled: false }');
      await call(off.url('/open/x'));
      await call(off.url('/nowhere'));
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(accessLines(off).length, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
