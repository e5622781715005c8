/**
 * `floodgate serve` on a Redis store at its defaults (only `url` given: the library's adaptive
 * timeout, bounded local fallback and write-back) while Redis hangs (SIGSTOP): every request is
 * answered, 2xx or 429 and never 5xx, by the local fallback (marked `floodgate-degraded: fallback`
 * and counted); once Redis answers again it decides again, and what the fallback admitted was
 * charged to it. Behaviour only: no durations are asserted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue, type Reply } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

function config(redisPort: number, upstream: string): string {
  return `
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", prefix: "fg-defaults-${process.pid}:" }
routes:
  - name: counted
    match: { path: /counted }
    upstream: ${upstream}
    rules:
      - name: whole-route
        policy: { algorithm: tokenBucket, capacity: 10, refillPerSecond: 0.000001 }
        key: { type: route }
  - name: tight
    match: { path: /tight }
    upstream: ${upstream}
    rules:
      - name: whole-route
        policy: { algorithm: gcra, rate: 1, periodMs: 600000, maxBurst: 2 }
        key: { type: route }
  - name: roomy
    match: { path: /roomy }
    upstream: ${upstream}
    rules:
      - name: whole-route
        policy: { algorithm: tokenBucket, capacity: 1000000, refillPerSecond: 0.000001 }
        key: { type: route }
`;
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

/** remainingOf reads `r=` of the RateLimit header. */
function remainingOf(reply: Reply): number {
  return Number(/;r=(\d+)/.exec(String(reply.headers.ratelimit))?.[1]);
}

describe("floodgate serve at the Redis store's defaults while Redis hangs", () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let gateway: GatewayProcess;

  before(async () => {
    redis = await startRedisServer();
    upstream = await startUpstream();
    gateway = await startGateway(config(redis.ports[0]!, upstream.origin));
    await gateway.waitForLog('ready');
  });
  after(async () => {
    redis?.signal(0, 'SIGCONT');
    await gateway?.stop();
    await upstream?.close();
    await redis?.stop();
  });

  it('answers every request by the local fallback (2xx or 429, never 5xx), bounded by the policy, then decides on Redis again', async () => {
    const before = [
      await call(gateway.url('/counted')),
      await call(gateway.url('/counted')),
      await call(gateway.url('/roomy')),
    ];
    assert.deepEqual(
      before.map((r) => [r.status, r.headers['floodgate-degraded']]),
      [
        [200, undefined],
        [200, undefined],
        [200, undefined],
      ],
    );
    assert.deepEqual(before.slice(0, 2).map(remainingOf), [9, 8]);

    redis.signal(0, 'SIGSTOP');
    let counted: Reply[];
    let tight: Reply[];
    try {
      counted = [];
      for (let i = 0; i < 3; i++) counted.push(await call(gateway.url('/counted')));
      tight = await Promise.all(Array.from({ length: 20 }, () => call(gateway.url('/tight'))));
    } finally {
      redis.signal(0, 'SIGCONT');
    }

    for (const r of [...counted, ...tight]) {
      assert.ok(r.status === 200 || r.status === 429, `answered ${r.status}: ${r.body}`);
      assert.equal(r.headers['floodgate-degraded'], 'fallback', 'the local fallback decided, and says so');
    }
    assert.deepEqual(
      counted.map((r) => r.status),
      [200, 200, 200],
      "the fallback admits within this gateway's share of the limit",
    );
    assert.equal(
      tight.filter((r) => r.status === 200).length,
      3,
      "and refuses beyond it: the fallback is bounded (one gateway: the policy's whole burst, 1 + maxBurst)",
    );
    assert.ok(
      tight
        .filter((r) => r.status === 429)
        .every((r) => /quota-exceeded/.test(r.body) && r.headers['retry-after'] !== undefined),
      'a fallback refusal is an ordinary 429',
    );

    const recovered = await untilTrue(
      async () => (await call(gateway.url('/roomy'))).headers['floodgate-degraded'] === undefined,
    );
    assert.ok(recovered, 'Redis decides again once it answers');
    const after = await call(gateway.url('/counted'));
    assert.equal(after.headers['floodgate-degraded'], undefined);
    assert.ok(remainingOf(after) <= 10 - 2 - 1, 'Redis decides, on its own count');

    const metrics = (await call(gateway.adminUrl('/metrics'))).body;
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', { route: 'counted', outcome: 'fallback_admitted' }),
      3,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', { route: 'tight', outcome: 'fallback_admitted' }),
      3,
    );
    assert.equal(
      metricValue(metrics, 'floodgate_decisions_total', { route: 'tight', outcome: 'fallback_limited' }),
      17,
    );
    assert.ok(
      metricValue(metrics, 'floodgate_store_errors_total', { policy: 'fallback' }) >= 1,
      'store failures are counted under the policy that answered',
    );
    assert.equal(
      metricValue(metrics, 'floodgate_responses_total', { status: '503' }) +
        metricValue(metrics, 'floodgate_responses_total', { status: '500' }),
      0,
    );
  });

  it('charges Redis with what the fallback admitted once it answers again (write-back)', async () => {
    const first = await call(gateway.url('/counted'));
    redis.signal(0, 'SIGSTOP');
    try {
      for (let i = 0; i < 2; i++)
        assert.equal((await call(gateway.url('/counted'))).headers['floodgate-degraded'], 'fallback');
    } finally {
      redis.signal(0, 'SIGCONT');
    }
    assert.ok(
      await untilTrue(async () => (await call(gateway.url('/roomy'))).headers['floodgate-degraded'] === undefined),
    );
    const wroteBack = await untilTrue(
      async () =>
        metricValue((await call(gateway.adminUrl('/metrics'))).body, 'floodgate_store_duration_seconds_count', {
          operation: 'charge',
          result: 'ok',
        }) >= 1,
      50,
    );
    assert.ok(wroteBack, 'a charge script ran');
    assert.equal(remainingOf(await call(gateway.url('/counted'))), remainingOf(first) - 2 - 1);
  });
});
