import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { signHs256 } from '../src/gateway/jwt.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';
import { upgrade } from './support/upgrade.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';
import { closedPort } from './support/ports.js';

const TOKEN = 'admin-token-for-the-tests-0123456789';
const JWT_SECRET = 'jwt-secret-for-the-tests-0123456789';

function configFor(upstream: string, dead: string): string {
  return `
admin: { tokenEnv: FG_TEST_ADMIN_TOKEN }
limits: { maxBodyBytes: 1000, maxHeaderBytes: 4096, upstreamTimeoutMs: 600, connectTimeoutMs: 600, headersTimeoutMs: 800, requestTimeoutMs: 5000 }
routes:
  - name: limited
    match: { path: /limited/* }
    upstream: ${upstream}
    rules:
      - name: per-ip
        policy: { algorithm: fixedWindow, limit: 3, windowMs: 600000 }
  - name: keyed
    match: { methods: [GET], path: /keyed/:tenant }
    upstream: ${upstream}
    rules:
      - name: per-tenant
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.000001 }
        key: { type: param, name: tenant }
      - name: per-api-key
        policy: { algorithm: tokenBucket, capacity: 6, refillPerSecond: 0.001 }
        key: { type: header, name: x-api-key }
        cost: 2
  - name: shadowed
    match: { path: /shadow/* }
    upstream: ${upstream}
    rules:
      - name: would-limit
        mode: shadow
        policy: { algorithm: tokenBucket, capacity: 1, refillPerSecond: 0.000001 }
  - name: queued
    match: { path: /queue/* }
    upstream: ${upstream}
    rules:
      - name: outflow
        mode: queue
        policy: { algorithm: gcra, rate: 10, periodMs: 1000, maxBurst: 0 }
        key: { type: route }
        queue: { maxWaitMs: 3000, maxQueue: 4 }
  - name: jwt
    match: { path: /jwt/* }
    upstream: ${upstream}
    rules:
      - name: per-user
        policy: { algorithm: slidingWindowLog, limit: 2, windowMs: 600000 }
        key: { type: jwt, claim: sub, secretEnv: FG_TEST_JWT_SECRET }
  - name: ws
    match: { path: /ws }
    upstream: ${upstream}
    rules:
      - name: sockets
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.000001 }
  - name: query
    match: { path: /query }
    upstream: ${upstream}
    rules:
      - name: per-tenant
        policy: { algorithm: slidingWindowCounter, limit: 1, windowMs: 600000 }
        key: { type: query, name: tenant }
  - name: dead
    match: { path: /dead/* }
    upstream: ${dead}
  - name: open
    upstream: ${upstream}
`;
}

/** Sends raw request text and resolves with the response head. */
function rawHead(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no answer: ${got}`)), 5_000);
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(got.slice(0, end));
    });
    socket.on('error', reject);
  });
}

describe('floodgate serve, end to end (a gateway process, a real upstream and client)', () => {
  let upstream: TestUpstream;
  let gw: GatewayProcess;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(configFor(upstream.origin, `http://127.0.0.1:${await closedPort()}`), {
      env: { FG_TEST_ADMIN_TOKEN: TOKEN, FG_TEST_JWT_SECRET: JWT_SECRET },
    });
    await gw.waitForLog('ready');
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    await upstream?.close();
  });

  it('counts down the draft headers per client, then refuses with 429, Retry-After and problem+json', async () => {
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(gw.url('/limited/x'));
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit-policy'], '"per-ip";q=3;w=600');
      seen.push(String(r.headers.ratelimit));
    }
    assert.deepEqual(
      seen.map((s) => /r=(\d+)/.exec(s)![1]),
      ['2', '1', '0'],
    );
    const refused = await call(gw.url('/limited/x'));
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.deepEqual(JSON.parse(refused.body)['violated-policies'], ['per-ip']);
    assert.equal(
      upstream.received.filter((r) => r.url === '/limited/x').length,
      3,
      'the refused request never reached the upstream',
    );
  });

  it('decides several rules together: a request refused by one is charged to none, each rule with its own cost', async () => {
    const h = { 'x-api-key': 'k1' };
    const a1 = await call(gw.url('/keyed/a'), { headers: h });
    const a2 = await call(gw.url('/keyed/a'), { headers: h });
    assert.deepEqual([a1.status, a2.status], [200, 200]);
    assert.match(String(a2.headers.ratelimit), /"per-tenant";r=0;t=\d+, "per-api-key";r=2;t=\d+/);
    const a3 = await call(gw.url('/keyed/a'), { headers: h });
    assert.equal(a3.status, 429);
    assert.deepEqual(JSON.parse(a3.body)['violated-policies'], ['per-tenant']);
    assert.match(
      String(a3.headers.ratelimit),
      /"per-api-key";r=2/,
      'the API key was not charged for the refused request',
    );
    const b1 = await call(gw.url('/keyed/b'), { headers: h });
    assert.equal(b1.status, 200, 'another tenant has its own count');
    const b2 = await call(gw.url('/keyed/b'), { headers: h });
    assert.equal(b2.status, 429);
    assert.deepEqual(JSON.parse(b2.body)['violated-policies'], ['per-api-key']);
    const other = await call(gw.url('/keyed/c'), { method: 'GET' });
    assert.equal(other.status, 200);
    assert.match(
      String(other.headers.ratelimit),
      /"per-tenant";r=1;t=\d+, "per-api-key";r=4/,
      'a request without the header is counted against its address under the key rule (onAbsent: fallback)',
    );
  });

  it('keys by query parameter', async () => {
    assert.equal((await call(gw.url('/query?tenant=t1'))).status, 200);
    assert.equal((await call(gw.url('/query?tenant=t1'))).status, 429);
    assert.equal((await call(gw.url('/query?tenant=t2'))).status, 200);
  });

  it('keys by a verified JWT claim; a forged token is refused (onInvalid: refuse), not counted as its claimed user', async () => {
    const alice = { authorization: `Bearer ${signHs256({ sub: 'alice' }, JWT_SECRET)}` };
    const forged = { authorization: `Bearer ${signHs256({ sub: 'alice' }, 'someone-elses-secret-000000')}` };
    assert.equal((await call(gw.url('/jwt/a'), { headers: alice })).status, 200);
    assert.equal((await call(gw.url('/jwt/a'), { headers: forged })).status, 401);
    assert.equal((await call(gw.url('/jwt/a'), { headers: forged })).status, 401);
    const second = await call(gw.url('/jwt/a'), { headers: alice });
    assert.equal(second.status, 200);
    assert.match(String(second.headers.ratelimit), /"per-user";r=0/);
    assert.equal((await call(gw.url('/jwt/a'), { headers: alice })).status, 429);
  });

  it('shadow mode decides and reports but never refuses', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await call(gw.url('/shadow/x'))).status, 200);
    const metrics = (await call(gw.adminUrl('/metrics'))).body;
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', {
        route: 'shadowed',
        rule: 'would-limit',
        outcome: 'shadow_admitted',
      }),
      1,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', {
        route: 'shadowed',
        rule: 'would-limit',
        outcome: 'shadow_limited',
      }),
      2,
    );
  });

  it("queue mode delays requests to the policy's outflow, in order, and answers 503 when the queue is full", async () => {
    const sent = performance.now();
    const done: number[] = [];
    const replies = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        call(gw.url(`/queue/${i}`)).then((r) => {
          done.push(i);
          return { i, status: r.status, atMs: performance.now() - sent };
        }),
      ),
    );
    const served = replies.filter((r) => r.status === 200);
    const full = replies.filter((r) => r.status === 503);
    assert.equal(served.length, 5, 'one passes at once and maxQueue (4) wait');
    assert.equal(full.length, 2);
    const spanMs = Math.max(...served.map((r) => r.atMs)) - Math.min(...served.map((r) => r.atMs));
    assert.ok(
      spanMs >= 300,
      `five requests at 10/s take at least 4 intervals to flow out (took ${spanMs.toFixed(0)} ms)`,
    );
    const full503 = await call(gw.url('/queue/x'));
    assert.ok([200, 503].includes(full503.status));
  });

  it('answers 502 for an upstream that refuses connections and 504 for one that never answers, as problem+json', async () => {
    const refused = await call(gw.url('/dead/x'));
    assert.equal(refused.status, 502);
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    const silent = await call(gw.url('/never'));
    assert.equal(silent.status, 504);
    assert.match(JSON.parse(silent.body).detail, /did not answer/);
  });

  it('strips hop-by-hop headers both ways and writes the forwarding headers afresh', async () => {
    // A raw request: client libraries manage Connection themselves.
    const head = await rawHead(
      gw.port,
      'GET /echo HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close, x-private\r\nx-private: 1\r\nkeep-alive: timeout=9\r\nte: trailers\r\nx-forwarded-for: 6.6.6.6\r\nx-kept: yes\r\n\r\n',
    );
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.doesNotMatch(head, /x-upstream-hop/i, 'a field the upstream named in Connection is not passed on');
    const seen = upstream.received.find((x) => x.url === '/echo')!;
    assert.equal(seen.headers['x-private'], undefined);
    assert.equal(seen.headers.te, undefined);
    assert.notEqual(seen.headers['keep-alive'], 'timeout=9');
    assert.equal(seen.headers['x-kept'], 'yes');
    assert.equal(seen.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(seen.headers.forwarded, 'for=127.0.0.1;host=127.0.0.1;proto=http');
  });

  it('enforces body and header size limits: 413 and 431', async () => {
    const big = await call(gw.url('/upload'), { method: 'POST', body: Buffer.alloc(2000, 97) });
    assert.equal(big.status, 413);
    const small = await call(gw.url('/upload'), { method: 'POST', body: Buffer.alloc(500, 97) });
    assert.equal(small.status, 200);
    assert.equal(JSON.parse(small.body).bodyBytes, 500, 'the body is streamed through whole');
    const chunked = await call(gw.url('/upload-chunked'), {
      method: 'POST',
      body: (async function* () {
        for (let i = 0; i < 5; i++) yield Buffer.alloc(400, 98);
      })() as never,
    });
    assert.equal(chunked.status, 413, 'a chunked body is counted as it passes');
    const huge = await call(gw.url('/x'), { headers: { 'x-huge': 'a'.repeat(5000) } });
    assert.equal(huge.status, 431);
  });

  it('lets a client still sending a body it refused read the 413 before the connection closes', async () => {
    // A client that writes its whole body before it reads (curl, most HTTP/1.1 clients) is still
    // sending when the 413 comes. Closing at once would answer its next bytes with a reset, which
    // can discard the 413 before the client reads it; the gateway reads on until the client closes.
    for (let attempt = 0; attempt < 5; attempt++) {
      const answer = await new Promise<string>((resolve, reject) => {
        let got = '';
        let sending = true;
        const chunk = Buffer.alloc(64 * 1024, 99);
        const socket = connect(gw.port, '127.0.0.1', () => {
          socket.write('POST /upload/x HTTP/1.1\r\nhost: gw\r\ncontent-length: 8388608\r\n\r\n');
          const more = (): void => {
            while (sending && socket.write(chunk));
            if (sending) socket.once('drain', more);
          };
          more();
        });
        const timer = setTimeout(() => reject(new Error(`no answer, no close; got: ${got}`)), 8_000);
        socket.on('data', (c: Buffer) => {
          got += c.toString('latin1');
          if (/\r\n\r\n/.test(got)) {
            sending = false;
            socket.end();
          }
        });
        socket.on('error', (err) => {
          clearTimeout(timer);
          resolve(`${got}\n(error: ${(err as NodeJS.ErrnoException).code ?? err.message})`);
        });
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(got);
        });
      });
      assert.match(answer, /^HTTP\/1\.1 413 /, `attempt ${attempt}: ${answer.slice(0, 300)}`);
      assert.match(answer, /connection: close/i);
    }
  });

  it('closes on a client that stalls in the middle of its headers (slowloris) with 408', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1', () =>
        socket.write('GET /limited/slow HTTP/1.1\r\nhost: gw\r\nx-a: 1\r\n'),
      );
      let got = '';
      const timer = setTimeout(() => reject(new Error('the stalled connection was never closed')), 8_000);
      socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(got);
      });
      socket.on('error', () => {});
    });
    assert.match(answer, /^HTTP\/1\.1 408/);
  });

  it('proxies WebSocket upgrades both ways and limits them like requests', async () => {
    const first = await upgrade(gw.port);
    assert.match(first.head, /^HTTP\/1\.1 101/);
    assert.match(first.head, /ratelimit: "sockets";r=1/);
    const echoed = new Promise<string>((resolve) => first.socket.once('data', (c: Buffer) => resolve(c.toString())));
    first.socket.write('ping');
    assert.equal(await echoed, 'ping');
    first.socket.destroy();
    (await upgrade(gw.port)).socket.destroy();
    const third = await upgrade(gw.port);
    assert.match(third.head, /^HTTP\/1\.1 429/);
    assert.match(third.head, /retry-after: \d+/);
    third.socket.destroy();
  });

  it('exports metrics: decisions by route, rule and outcome, responses and upstream latency', async () => {
    const text = (await call(gw.adminUrl('/metrics'))).body;
    assert.ok(
      metricValue(text, 'floodgate_decisions_total', { route: 'limited', rule: 'per-ip', outcome: 'limited' }) >= 1,
    );
    assert.ok(
      metricValue(text, 'floodgate_decisions_total', { route: 'limited', rule: 'per-ip', outcome: 'near_limit' }) >= 1,
    );
    assert.ok(
      metricValue(text, 'floodgate_decisions_total', { route: 'queued', rule: 'outflow', outcome: 'queue_rejected' }) >=
        2,
    );
    assert.ok(metricValue(text, 'floodgate_responses_total', { route: 'dead', status: '502' }) >= 1);
    assert.ok(metricValue(text, 'floodgate_upstream_duration_seconds_count', { route: 'limited', status: '200' }) >= 3);
    assert.equal(metricValue(text, 'floodgate_queue_depth', { route: 'queued', rule: 'outflow' }), 0);
    assert.equal(metricValue(text, 'floodgate_ready'), 1);
    assert.equal(metricValue(text, 'floodgate_in_flight_requests'), 0);
  });

  it('serves health and readiness, and the admin API only with the token', async () => {
    assert.equal((await call(gw.adminUrl('/healthz'))).status, 200);
    assert.equal((await call(gw.adminUrl('/readyz'))).status, 200);
    assert.equal((await call(gw.adminUrl('/admin/config'))).status, 401);
    assert.equal(
      (await call(gw.adminUrl('/admin/config'), { headers: { authorization: 'Bearer wrong-token' } })).status,
      401,
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    const config = await call(gw.adminUrl('/admin/config'), { headers: auth });
    assert.equal(config.status, 200);
    assert.ok(!config.body.includes(TOKEN) && !config.body.includes(JWT_SECRET));
    assert.equal(JSON.parse(config.body).config.routes[0].name, 'limited');
    const q = '?route=limited&rule=per-ip&identity=ip:127.0.0.1';
    const state = JSON.parse((await call(gw.adminUrl(`/admin/keys${q}`), { headers: auth })).body);
    assert.equal(state.state.remaining, 0);
    assert.equal(
      (await call(gw.adminUrl(`/admin/keys/refund${q}&cost=1`), { method: 'POST', headers: auth })).status,
      200,
    );
    assert.equal((await call(gw.url('/limited/x'))).status, 200, 'the refunded unit is spent');
    assert.equal((await call(gw.url('/limited/x'))).status, 429);
    const reset = JSON.parse(
      (await call(gw.adminUrl(`/admin/keys/reset${q}`), { method: 'POST', headers: auth })).body,
    );
    assert.equal(reset.state.remaining, 3);
    assert.equal((await call(gw.url('/limited/x'))).status, 200);
    assert.equal((await call(gw.adminUrl('/admin/keys?route=nope&rule=x&identity=y'), { headers: auth })).status, 400);
  });
});
