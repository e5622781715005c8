/**
 * `floodgate serve` with a smooth rule on one real Redis, several gateway processes forwarding to
 * one upstream that notes when each request arrives:
 * - the fleet's requests reach the upstream spaced by 1/rate with the burst Guava allows, never
 *   closer (the check of the library's own fleet test, on the upstream's arrival times);
 * - a client that leaves while waiting gives its turn back: the next request takes it;
 * - Redis hung (SIGSTOP): a waiter already in line still gets its turn, new requests are answered
 *   by the store's failure policy (fail-closed: 503 marked degraded; the local fallback: paced in
 *   each process), none hangs, and Redis decides again once it resumes.
 * Behaviour only: which turn a request got, and whether it was answered, not how fast.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startRedisCluster, startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue } from './support/http.js';

/** A stall of this process: a time its event loop did not run (performance.now(), ms). */
interface Stall {
  readonly fromMs: number;
  readonly toMs: number;
}

/** The upstream's ticker: a gap between its ticks longer than STALL_MS is a stall of the process that notes arrivals. */
const TICK_MS = 5;
const STALL_MS = 25;

/**
 * ArrivalUpstream answers 200 at once and notes when each request's head arrived (performance.now(),
 * ms), and when this process stalled: a request that arrived during a stall is noted when the stall
 * ends, so its time is only known to lie within the stall.
 */
interface ArrivalUpstream {
  readonly origin: string;
  readonly arrivals: { readonly path: string; readonly atMs: number }[];
  readonly stalls: readonly Stall[];
  close(): Promise<void>;
}

async function startArrivalUpstream(): Promise<ArrivalUpstream> {
  const arrivals: { path: string; atMs: number }[] = [];
  const stalls: Stall[] = [];
  let lastTickMs = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    if (now - lastTickMs > STALL_MS) stalls.push({ fromMs: lastTickMs, toMs: now });
    lastTickMs = now;
  }, TICK_MS);
  const server: Server = createServer((req, res) => {
    arrivals.push({ path: req.url ?? '', atMs: performance.now() });
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    arrivals,
    stalls,
    close: () =>
      new Promise((resolve) => {
        clearInterval(ticker);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * uncertainty returns how much earlier than `atMs` an arrival noted then may have come: the time
 * since the start of a stall it was noted within (or just after, before the ticker ran), else 0.
 */
export function uncertainty(stalls: readonly Stall[], atMs: number): number {
  let ms = 0;
  for (const stall of stalls)
    if (stall.fromMs < atMs && atMs <= stall.toMs + STALL_MS) ms = Math.max(ms, atMs - stall.fromMs);
  return ms;
}

function smoothRoute(name: string, upstream: string, policy: string, maxWaitMs: number): string {
  return `
  - name: ${name}
    match: { path: /${name}/* }
    upstream: ${upstream}
    rules:
      - name: even
        policy: ${policy}
        key: { type: route }
        mode: queue
        queue: { maxWaitMs: ${maxWaitMs}, maxQueue: 1000 }`;
}

/** A route with no rules: one request through it warms a gateway's forwarding path (its first is slow). */
function warmRoute(upstream: string): string {
  return `
  - name: warm
    match: { path: /warm/* }
    upstream: ${upstream}`;
}

/** warmUp sends a request through each gateway's rule-free route, so the first timed one is not a cold start. */
async function warmUp(gateways: readonly GatewayProcess[]): Promise<void> {
  for (const [i, g] of gateways.entries()) assert.equal((await call(g.url(`/warm/${i}`))).status, 200);
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** untilTrue calls `check` every 20 ms until it holds, at most `attempts` times. */
async function untilTrue(check: () => Promise<boolean>, attempts = 500): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return true;
    await pause(20);
  }
  return false;
}

async function queueDepth(gateway: GatewayProcess, route: string): Promise<number> {
  const text = (await call(gateway.adminUrl('/metrics'))).body;
  return metricValue(text, 'floodgate_queue_depth', { route, rule: 'even' });
}

/**
 * assertSpacing checks arrival times (ms) against Guava's promise, as the library's fleet test
 * checks reservations: between any two, at most one per interval over the time between them, plus
 * the permits that can be stored, plus the first. The library's test reads the reservations' own
 * times on Redis's clock; arrivals at an upstream come later than their turns by a delay that
 * varies (timers, two event loops, the proxy hop, a busy machine's scheduling), so `slackMs` of
 * that measurement is allowed: a window may look that much shorter than the turns it holds. An
 * arrival noted after a stall of the noting process may have come up to `uncertainMs(atMs)`
 * earlier, so a window that starts with it may be that much longer than it looks.
 */
export function assertSpacing(
  atMs: readonly number[],
  permitsPerSecond: number,
  maxStored: number,
  slackMs: number,
  uncertainMs: (atMs: number) => number = () => 0,
): void {
  const intervalMs = 1000 / permitsPerSecond;
  const sorted = [...atMs].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i++) {
    const earlierMs = uncertainMs(sorted[i]!);
    for (let j = i + 1; j < sorted.length; j++) {
      const allowed = maxStored + (sorted[j]! - sorted[i]! + earlierMs + slackMs) / intervalMs + 1;
      assert.ok(
        j - i + 1 <= allowed + 1e-9,
        `${j - i + 1} arrivals within ${(sorted[j]! - sorted[i]!).toFixed(1)} ms; all (ms after the first): ${sorted.map((t) => (t - sorted[0]!).toFixed(0)).join(' ')}`,
      );
    }
  }
}

describe('the spacing check', () => {
  it('holds for a fleet at the rate and fails for three processes each pacing at the rate alone', () => {
    const even = Array.from({ length: 24 }, (_, i) => i * 200);
    assertSpacing(even, 5, 2, 200);
    const apart = [0, 1, 2].flatMap((p) => Array.from({ length: 8 }, (_, i) => i * 200 + p * 7));
    assert.throws(() => assertSpacing(apart, 5, 2, 200), /arrivals within/);
  });

  it('takes an arrival noted after a stall of the noting process as possibly as early as the stall began', () => {
    // Turns at 0, 161, 400, 600, 800 and 954 ms, the four from 400 noted at once when a stall from
    // 170 to 950 ended: 5 arrivals within 196 ms as noted, which a window of 954 ms allows.
    const noted = [0, 161, 954, 954, 955, 957, 1150];
    assert.throws(() => assertSpacing(noted, 5, 2, 200), /5 arrivals within 196/);
    const stalls = [{ fromMs: 170, toMs: 950 }];
    assert.equal(uncertainty(stalls, 954), 784);
    assert.equal(uncertainty(stalls, 161), 0);
    assert.equal(uncertainty(stalls, 1150), 0);
    assertSpacing(noted, 5, 2, 200, (t) => uncertainty(stalls, t));
    // A stall does not excuse a burst noted well after it.
    assert.throws(() => assertSpacing([0, 1000, 1001, 1002, 1003, 1004], 5, 2, 200, (t) => uncertainty(stalls, t)));
  });
});

describe('a smooth rule shared by three gateway processes on one Redis', () => {
  let redis: RedisServers;
  let upstream: ArrivalUpstream;
  const gateways: GatewayProcess[] = [];

  before(async () => {
    redis = await startRedisServer();
    upstream = await startArrivalUpstream();
    // A fixed store timeout well above this machine's stalls: under the adaptive default (from
    // 25 ms) a slow answer is decided by the local fallback, each process pacing its share alone,
    // which is the failure policy's test below, not this one's.
    const yaml = `
store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]}", prefix: "fg-smooth-${process.pid}:", timeoutMs: 5000 }
routes:${warmRoute(upstream.origin)}${smoothRoute('paced', upstream.origin, '{ algorithm: smoothBursty, permitsPerSecond: 5, maxBurstSeconds: 0.4 }', 20_000)}${smoothRoute('leave', upstream.origin, '{ algorithm: smoothBursty, permitsPerSecond: 1, maxBurstSeconds: 0 }', 10_000)}${smoothRoute('keep', upstream.origin, '{ algorithm: smoothBursty, permitsPerSecond: 1, maxBurstSeconds: 0 }', 10_000)}
`;
    // One after another: three starting at once on a busy machine can outlast the helper's start timeout.
    for (let i = 0; i < 3; i++) gateways.push(await startGateway(yaml));
  });
  after(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await upstream?.close();
    await redis?.stop();
  });

  it("forwards the fleet's requests spaced by 1/rate with Guava's burst, never closer", async () => {
    await warmUp(gateways);
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => call(gateways[i % 3]!.url(`/paced/${i}`))));
    assert.deepEqual(
      replies.map((r) => r.status),
      replies.map(() => 200),
    );
    const atMs = upstream.arrivals.filter((a) => a.path.startsWith('/paced/')).map((a) => a.atMs);
    assert.equal(atMs.length, 24);
    // 5/s with 0.4 s of stored permits (2); one interval (200 ms) of measurement slack.
    assertSpacing(atMs, 5, 5 * 0.4, 200, (t) => uncertainty(upstream.stalls, t));
    // Paced at the rate, not slower: 23 intervals of 200 ms after the first, well within twice that.
    assert.ok(Math.max(...atMs) - Math.min(...atMs) < 2 * 23 * 200, 'the fleet keeps up the rate');
  });

  it('gives the turn of a client that leaves while waiting to the next request', async () => {
    const arrivalOf = (path: string): number | undefined => upstream.arrivals.find((a) => a.path === path)?.atMs;
    const b = gateways[1]!;
    assert.equal((await call(b.url('/leave/1'))).status, 200);
    const leaving = new AbortController();
    const left = request(b.url('/leave/2'), { signal: leaving.signal }).then(
      () => 'answered',
      () => 'left',
    );
    assert.ok(await untilTrue(async () => (await queueDepth(b, 'leave')) === 1), 'the second request waits its turn');
    leaving.abort();
    assert.equal(await left, 'left');
    assert.ok(await untilTrue(async () => (await queueDepth(b, 'leave')) === 0), 'the gateway saw it leave');
    assert.equal((await call(b.url('/leave/3'))).status, 200);
    assert.equal(arrivalOf('/leave/2'), undefined, 'the request that left was never forwarded');
    // The third took the second's turn, one interval (1 s) after the first, not the turn after it (2 s).
    assert.ok(arrivalOf('/leave/3')! - arrivalOf('/leave/1')! < 1500, 'the third took the turn given back');

    // The same steps with a client that stays: the third waits for the turn after the second's,
    // and on another gateway, since the fleet shares the line.
    const [a, c] = [gateways[0]!, gateways[2]!];
    assert.equal((await call(a.url('/keep/1'))).status, 200);
    const staying = call(a.url('/keep/2'));
    assert.ok(await untilTrue(async () => (await queueDepth(a, 'keep')) === 1), 'the second request waits its turn');
    assert.equal((await call(c.url('/keep/3'))).status, 200);
    assert.equal((await staying).status, 200);
    // Noted after a stall of this process, the second may have come as early as the stall began.
    const [second, third] = [arrivalOf('/keep/2')!, arrivalOf('/keep/3')!];
    const stalls = JSON.stringify(upstream.stalls.map((st) => [Math.round(st.fromMs), Math.round(st.toMs)]));
    assert.ok(
      third > second - uncertainty(upstream.stalls, second),
      `the third came after the second: ${third.toFixed(0)} against ${second.toFixed(0)}, stalls ${stalls}`,
    );
    assert.ok(arrivalOf('/keep/3')! - arrivalOf('/keep/1')! >= 1500, 'the third waited for the turn after the second');
  });
});

describe('a smooth rule while its Redis hangs (SIGSTOP)', () => {
  let redis: RedisServers;
  let upstream: ArrivalUpstream;
  let closed: GatewayProcess;
  let local: GatewayProcess;
  const MAX_WAIT_MS = 1500;

  before(async () => {
    redis = await startRedisServer();
    upstream = await startArrivalUpstream();
    const routes = smoothRoute(
      'slow',
      upstream.origin,
      '{ algorithm: smoothBursty, permitsPerSecond: 2, maxBurstSeconds: 0 }',
      MAX_WAIT_MS,
    );
    const store = (onError: string): string =>
      `store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]}", prefix: "fg-smooth-hang-${process.pid}:", onError: ${onError} }`;
    closed = await startGateway(`${store('fail-closed')}\nroutes:${routes}\n`);
    local = await startGateway(`${store('local')}\nroutes:${routes}\n`);
  });
  after(async () => {
    redis?.signal(0, 'SIGCONT');
    await Promise.all([closed?.stop(), local?.stop()]);
    await upstream?.close();
    await redis?.stop();
  });

  /**
   * answered sends a request and resolves to its status, followed by its `floodgate-degraded` mark
   * when it has one ('503 fail-closed'), or to 'hung' when no answer came within maxWaitMs and 5 s more.
   */
  async function answered(gateway: GatewayProcess, path: string): Promise<string> {
    try {
      const res = await request(gateway.url(path), { signal: AbortSignal.timeout(MAX_WAIT_MS + 5_000) });
      await res.body.text();
      const mark = res.headers['floodgate-degraded'];
      return mark === undefined ? String(res.statusCode) : `${res.statusCode} ${String(mark)}`;
    } catch {
      return 'hung';
    }
  }

  it('lets a waiter already in line through, answers new requests by the failure policy, and decides on Redis again after', async () => {
    assert.equal(await answered(closed, '/slow/1'), '200');
    const inLine = answered(local, '/slow/2');
    assert.ok(
      await untilTrue(async () => (await queueDepth(local, 'slow')) === 1),
      'the second request waits its turn',
    );
    redis.signal(0, 'SIGSTOP');
    assert.equal(await inLine, '200', 'the waiter in line had its turn reserved before Redis hung');
    assert.equal(await answered(closed, '/slow/3'), '503 fail-closed');
    // The local fallback paces in this process: admitted or refused at once, never hung, never 5xx.
    const during = await Promise.all([4, 5, 6].map((i) => answered(local, `/slow/${i}`)));
    for (const status of during) assert.ok(status === '200' || status === '429', `answered ${status}`);
    assert.ok(during.includes('200'), 'the local fallback admits at its share of the rate');
    redis.signal(0, 'SIGCONT');
    assert.ok(
      await untilTrue(async () => (await answered(closed, '/slow/after')) === '200'),
      'Redis decides again once it answers',
    );
  });
});

describe('a smooth rule shared by two gateway processes on a Redis Cluster', () => {
  it("forwards the fleet's requests spaced by 1/rate, on the cluster's one slot for the rule", async () => {
    const cluster = await startRedisCluster();
    const upstream = await startArrivalUpstream();
    const nodes = cluster.ports.map((p) => `"redis://127.0.0.1:${p}"`).join(', ');
    const yaml = `
store: { type: redis, nodes: [${nodes}], timeoutMs: 5000, onError: fail-closed }
routes:${warmRoute(upstream.origin)}${smoothRoute('paced', upstream.origin, '{ algorithm: smoothBursty, permitsPerSecond: 5, maxBurstSeconds: 0 }', 20_000)}
`;
    const gateways: GatewayProcess[] = [];
    try {
      for (let i = 0; i < 2; i++) gateways.push(await startGateway(yaml));
      await Promise.all(gateways.map((g) => g.waitForLog('ready')));
      await warmUp(gateways);
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) => call(gateways[i % 2]!.url(`/paced/${i}`))),
      );
      assert.deepEqual(
        replies.map((r) => [r.status, r.headers['floodgate-degraded']]),
        replies.map(() => [200, undefined]),
      );
      const atMs = upstream.arrivals.filter((a) => a.path.startsWith('/paced/')).map((a) => a.atMs);
      assert.equal(atMs.length, 12);
      // No stored permits (maxBurstSeconds 0); one interval (200 ms) of measurement slack.
      assertSpacing(atMs, 5, 0, 200);
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
      await upstream.close();
      await cluster.stop();
    }
  });
});
