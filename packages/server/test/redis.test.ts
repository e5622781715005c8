import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisCluster, startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue, type Reply } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

/**
 * The gateway's config for these tests. The counted limits are token buckets that refill too slowly
 * to matter in a run (one token per 11 days): a fixed window aligned to the clock would reset at a
 * boundary the run may cross (a 10-minute window at 03:00:00 once admitted 11 of 10).
 */
function config(redisPort: number, upstream: string, prefix: string, store?: string): string {
  return `
${store ?? `store: { type: redis, url: "redis://127.0.0.1:${redisPort}", timeoutMs: 100, onError: fail-open, prefix: "${prefix}" }`}
routes:
  - name: shared
    match: { path: /shared }
    upstream: ${upstream}
    rules:
      - name: whole-route
        policy: { algorithm: tokenBucket, capacity: 10, refillPerSecond: 0.000001 }
        key: { type: route }
  - name: outage
    match: { path: /outage }
    upstream: ${upstream}
    rules:
      - name: whole-route
        policy: { algorithm: gcra, rate: 1, periodMs: 600000, maxBurst: 2 }
        key: { type: route }
  - name: neighbours
    match: { path: /neighbours }
    upstream: ${upstream}
    rules:
      - name: ip
        policy: { algorithm: tokenBucket, capacity: 23, refillPerSecond: 0.000001 }
        key: { type: ip }
      - name: user
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.000001 }
        key: { type: header, name: x-user }
`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('floodgate serve on a real Redis', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    redis = await startRedisServer();
    upstream = await startUpstream();
    const prefix = `fg-gw-test-${process.pid}:`;
    [a, b] = await Promise.all([
      startGateway(config(redis.ports[0]!, upstream.origin, prefix)),
      startGateway(config(redis.ports[0]!, upstream.origin, prefix)),
    ]);
    await Promise.all([a.waitForLog('ready'), b.waitForLog('ready')]);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await upstream?.close();
    await redis?.stop();
  });

  it('two gateway processes hold one shared limit exactly', async () => {
    const replies: Reply[] = [];
    // 30 requests, 3 at a time, spread over both gateways.
    for (let i = 0; i < 10; i++)
      replies.push(
        ...(await Promise.all([
          call(a.url('/shared')),
          call(b.url('/shared')),
          call(i % 2 === 0 ? a.url('/shared') : b.url('/shared')),
        ])),
      );
    assert.equal(replies.filter((r) => r.status === 200).length, 10);
    assert.equal(replies.filter((r) => r.status === 429).length, 20);
    const remaining = replies
      .filter((r) => r.status === 200)
      .map((r) => Number(/r=(\d+)/.exec(String(r.headers.ratelimit))![1]));
    assert.deepEqual(
      remaining.sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      'each admission saw the one shared count',
    );
  });

  it('never refuses a neighbour on the same address for a charge taken back: the refusals of an exhausted user charge nothing', async () => {
    const as = (user: string): Promise<Reply> => call(a.url('/neighbours'), { headers: { 'x-user': user } });
    assert.deepEqual(
      (await Promise.all([as('greedy'), as('greedy')])).map((r) => r.status),
      [200, 200],
    );
    // 60 refused requests of the exhausted user race 20 neighbours for the address's last 21 units.
    const greedy = Array.from({ length: 60 }, () => as('greedy'));
    const neighbours = Array.from({ length: 20 }, (_, i) => as(`neighbour-${i}`));
    const [g, n] = await Promise.all([Promise.all(greedy), Promise.all(neighbours)]);
    assert.ok(
      g.every((r) => r.status === 429 && /"user"/.test(r.body)),
      'every request of the exhausted user is refused by its user rule',
    );
    const wrong = n.filter((r) => r.status !== 200);
    assert.equal(wrong.length, 0, `neighbours refused: ${wrong.map((r) => r.body).join(' | ')}`);
    const last = await as('neighbour-last');
    assert.equal(last.status, 200, 'the address had exactly 1 unit left: 23 - 2 - 20');
    assert.equal((await as('neighbour-after')).status, 429);
  });

  it('answers within its timeout as fail-open while Redis hangs, and decides by Redis again soon after it returns', async () => {
    assert.equal((await call(a.url('/outage'))).status, 200);
    redis.signal(0, 'SIGSTOP');
    try {
      for (let i = 0; i < 6; i++) {
        const started = performance.now();
        const r = await call(i % 2 === 0 ? a.url('/outage') : b.url('/outage'));
        const tookMs = performance.now() - started;
        assert.equal(r.status, 200, 'fail-open admits');
        assert.equal(r.headers['floodgate-degraded'], 'fail-open');
        assert.ok(tookMs < 1_500, `answered in ${tookMs.toFixed(0)} ms while Redis hung (timeout 100 ms)`);
      }
    } finally {
      redis.signal(0, 'SIGCONT');
    }
    const back = performance.now();
    let decidedByRedis: Reply | undefined;
    while (performance.now() - back < 5_000) {
      const r = await call(a.url('/outage'));
      if (r.headers['floodgate-degraded'] === undefined) {
        decidedByRedis = r;
        break;
      }
      await sleep(20);
    }
    assert.ok(decidedByRedis !== undefined, 'Redis decides again after it returns');
    const recoveredMs = performance.now() - back;
    assert.ok(recoveredMs < 1_000, `decided by Redis ${recoveredMs.toFixed(0)} ms after it returned`);
    assert.match(String(decidedByRedis.headers.ratelimit), /"whole-route";r=\d/);
    const metrics = (await call(a.adminUrl('/metrics'))).body;
    assert.ok(metricValue(metrics, 'floodgate_decisions_total', { route: 'outage', outcome: 'fail_open' }) >= 3);
    assert.ok(metricValue(metrics, 'floodgate_store_duration_seconds_count') >= 5, 'store round trips are timed');
    assert.ok(metricValue(metrics, 'floodgate_store_errors_total') >= 1, 'store failures are counted');
  });

  it('fails open while Redis is down, and recovers when it restarts', async () => {
    await redis.kill(0);
    const down = await call(b.url('/outage'));
    assert.equal(down.status, 200);
    assert.equal(down.headers['floodgate-degraded'], 'fail-open');
    await redis.restart(0);
    const back = performance.now();
    let recovered = false;
    while (performance.now() - back < 5_000 && !recovered) {
      const r = await call(b.url('/outage'));
      recovered = r.headers['floodgate-degraded'] === undefined;
      if (!recovered) await sleep(20);
    }
    assert.ok(recovered, 'decided by Redis again after the restart');
  });
});

describe('floodgate serve on a real Redis Cluster', () => {
  it("two gateway processes hold one shared limit exactly, per key, across the cluster's slots", async () => {
    const cluster = await startRedisCluster();
    const upstream = await startUpstream();
    const nodes = cluster.ports.map((p) => `"redis://127.0.0.1:${p}"`).join(', ');
    const yaml = config(
      0,
      upstream.origin,
      '',
      `store: { type: redis, nodes: [${nodes}], timeoutMs: 1000, onError: fail-closed }`,
    ).replace(/key: \{ type: route \}/, 'key: { type: header, name: x-tenant }');
    const gateways = await Promise.all([startGateway(yaml), startGateway(yaml)]);
    try {
      await Promise.all(gateways.map((g) => g.waitForLog('ready')));
      const tenants = ['alpha', 'beta', 'gamma', 'delta'];
      const replies = await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          call(gateways[i % 2]!.url('/shared'), { headers: { 'x-tenant': tenants[i % 4]! } }).then((r) => ({
            tenant: tenants[i % 4]!,
            r,
          })),
        ),
      );
      for (const t of tenants) {
        const mine = replies.filter((x) => x.tenant === t);
        assert.equal(
          mine.filter((x) => x.r.status === 200).length,
          10,
          `${t}: exactly the limit admitted across both gateways`,
        );
        assert.equal(mine.filter((x) => x.r.status === 429).length, 6);
        assert.ok(
          mine.every((x) => x.r.headers['floodgate-degraded'] === undefined),
          'every decision was made by Redis',
        );
      }
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
      await upstream.close();
      await cluster.stop();
    }
  });
});
