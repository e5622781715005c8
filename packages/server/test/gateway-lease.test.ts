/**
 * A rule decided from quota leases (`lease:` on a rule): its config mistakes reported at
 * file:line with a fix, and three real `floodgate serve` processes on one real Redis admitting no
 * more than the limit, steady and skewed (one process taking 80% of the requests), with every unit
 * they held coming back when they stop: a fourth, per-request gateway then admits exactly the rest.
 * The buckets refill one token per 11 days, so that a count over the run is the whole truth.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { parseConfig } from '../src/config/load.js';
import { ConfigError, type ConfigProblem } from '../src/config/problems.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call } from './support/http.js';

function problemsOf(yaml: string): readonly ConfigProblem[] {
  try {
    parseConfig(yaml, 'lease.yaml', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const REDIS_STORE = 'store: { type: redis, url: "redis://127.0.0.1:1" }\n';

function withRule(rule: string, store = REDIS_STORE): string {
  return `${store}routes:
  - name: api
    upstream: http://127.0.0.1:3000
    rules:
${rule}`;
}

describe('a leased rule in the config', () => {
  it('loads on a Redis store with the lease settings', () => {
    const config = parseConfig(
      withRule(`      - name: global
        policy: { algorithm: tokenBucket, capacity: 10000, refillPerSecond: 10000 }
        key: { type: route }
        lease: { leaseMs: 500, maxOutstandingShare: 0.01 }
`),
      'lease.yaml',
      {},
    );
    assert.deepEqual(config.routes[0]!.rules[0]!.lease, { leaseMs: 500, maxOutstandingShare: 0.01 });
  });

  const mistakes: readonly (readonly [
    what: string,
    yaml: string,
    line: number,
    path: string,
    says: RegExp,
    fix: RegExp,
  ])[] = [
    [
      'the memory store',
      withRule(
        `      - name: global
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 10 }
        lease: {}
`,
        '',
      ),
      7,
      'routes[0].rules[0].lease',
      /keeps its state in memory/,
      /store: \{ type: redis/,
    ],
    [
      'a sliding window',
      withRule(`      - name: global
        policy: { algorithm: slidingWindowLog, limit: 100, windowMs: 1000 }
        lease: {}
`),
      7,
      'routes[0].rules[0].policy.algorithm',
      /cannot run the policy "sliding-window-log"/,
      /tokenBucket, leakyBucket, gcra or fixedWindow/,
    ],
    [
      'queue mode',
      withRule(`      - name: global
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 10 }
        mode: queue
        lease: {}
`),
      9,
      'routes[0].rules[0].lease',
      /books future turns/,
      /mode: enforce or shadow/,
    ],
    [
      'a share above 1',
      withRule(`      - name: global
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 10 }
        lease: { maxOutstandingShare: 2 }
`),
      8,
      'routes[0].rules[0].lease.maxOutstandingShare',
      /1/,
      /./,
    ],
    [
      'an unknown setting',
      withRule(`      - name: global
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 10 }
        lease: { leaseSeconds: 1 }
`),
      8,
      'routes[0].rules[0].lease.leaseSeconds',
      /leaseSeconds/,
      /./,
    ],
  ];
  for (const [what, yaml, line, path, says, fix] of mistakes) {
    it(`reports ${what} at its line, with a fix`, () => {
      const found = problemsOf(yaml).find((p) => p.path === path);
      assert.ok(found, `a problem at ${path}: ${JSON.stringify(problemsOf(yaml))}`);
      assert.equal(found.file, 'lease.yaml');
      assert.equal(found.line, line);
      assert.match(found.message, says);
      assert.match(found.hint, fix);
    });
  }
});

describe('three gateway processes leasing from one Redis', () => {
  let redis: RedisServers;
  let upstream: Server;
  let origin: string;
  before(async () => {
    redis = await startRedisServer();
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  after(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
    await redis.stop();
  });

  // One token per 11 days: nothing refills within the test.
  const rule = (lease: boolean): string => `
      - name: global
        policy: { algorithm: tokenBucket, capacity: 300, refillPerSecond: 0.00000105 }
        key: { type: route }${lease ? '\n        lease: { maxOutstandingShare: 0.05 }' : ''}`;
  const config = (lease: boolean): string => `
store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]}", prefix: "fg-lease-${process.pid}:", timeoutMs: 5000 }
routes:
  - name: steady
    match: { path: /steady/* }
    upstream: ${origin}
    rules:${rule(lease)}
  - name: skewed
    match: { path: /skewed/* }
    upstream: ${origin}
    rules:${rule(lease)}
`;

  /** Sends `count` requests to `path` on `gateway`, one after another, and returns how many were admitted (200). */
  async function send(gateway: GatewayProcess, path: string, count: number): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < count; i++) {
      const { status } = await call(gateway.url(path));
      assert.ok(status === 200 || status === 429, `status ${status}`);
      if (status === 200) admitted++;
    }
    return admitted;
  }

  it('admit no more than the limit, steady and skewed, and give back what they held when they stop', async (t) => {
    const gateways: GatewayProcess[] = [];
    for (let i = 0; i < 3; i++) gateways.push(await startGateway(config(true)));
    let steady: number[];
    let skewed: number[];
    try {
      steady = await Promise.all(gateways.map((g) => send(g, '/steady/x', 150)));
      skewed = await Promise.all(gateways.map((g, i) => send(g, '/skewed/x', i === 0 ? 360 : 45)));
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
    }
    const steadyTotal = steady.reduce((a, b) => a + b, 0);
    const skewedTotal = skewed.reduce((a, b) => a + b, 0);
    assert.ok(steadyTotal <= 300, `steady: ${steady.join(' + ')} = ${steadyTotal} admitted of 300`);
    assert.ok(skewedTotal <= 300, `skewed: ${skewed.join(' + ')} = ${skewedTotal} admitted of 300`);
    assert.ok(steady.every((n) => n > 0) && skewed.every((n) => n > 0), 'every process admitted some');
    // A per-request gateway on the same keys admits exactly what the leases did not take.
    const check = await startGateway(config(false));
    try {
      const steadyRest = await send(check, '/steady/x', 320);
      const skewedRest = await send(check, '/skewed/x', 320);
      t.diagnostic(`steady ${steady.join(' + ')} then ${steadyRest}; skewed ${skewed.join(' + ')} then ${skewedRest}`);
      assert.equal(steadyTotal + steadyRest, 300, 'steady: no unit lost or spent twice');
      assert.equal(skewedTotal + skewedRest, 300, 'skewed: no unit lost or spent twice');
    } finally {
      await check.stop();
    }
  });
});
