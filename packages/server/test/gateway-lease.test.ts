/**
 * A rule decided from quota leases (`lease:` on a rule): its config mistakes reported at
 * file:line with a fix, and fleets of three and of eight real `floodgate serve` processes on one
 * real Redis admitting no more than the limit, steady and skewed (one process sending 80% of the
 * requests), each process admitted in proportion to its demand until the key is contended, and
 * every unit they held coming back when they stop: a per-request gateway then admits exactly the
 * rest. The buckets refill one token per 11 days, so that a count over the run is the whole truth.
 * The share each process gets under contention is measured by bench/leases.ts, not asserted here.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
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

/**
 * Demand is how a fleet's processes send: in each of `rounds` rounds, process i sends
 * `perRound[i]` requests one after another, all processes at once; a round ends when every
 * process has its answers. Each process's share of the demand is then the same in every round.
 */
interface Demand {
  readonly perRound: readonly number[];
  readonly rounds: number;
}

/** Each of `size` processes sending one request per round, for `rounds` rounds. */
function steadyDemand(size: number, rounds: number): Demand {
  return { perRound: Array<number>(size).fill(1), rounds };
}

/** Process 0 sending `first` requests per round and every other process one. */
function skewedDemand(size: number, first: number, rounds: number): Demand {
  return { perRound: [first, ...Array<number>(size - 1).fill(1)], rounds };
}

describe('gateway processes leasing from one Redis', () => {
  let redis: RedisServers;
  let upstream: Server;
  let origin: string;
  before(async () => {
    redis = await startRedisServer();
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    // Idle sockets kept a minute: a gateway lagging on a loaded machine may reuse one past node's
    // default 5 s, which the upstream would already have closed (a 502 that says nothing of leases).
    upstream.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  after(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
    await redis.stop();
  });

  const CAPACITY = 300;
  const SHARE = 0.05;
  /** What may be out on leases at once (floor(SHARE x CAPACITY)). */
  const MAX_OUTSTANDING = Math.floor(SHARE * CAPACITY);
  // One token per 11 days: nothing refills within the test. A lease outlasts the run, so that
  // every unit comes back when the processes stop however slowly a loaded machine runs them
  // (returns ahead of a lease's end are timed on the manual clock, test/leases).
  const rule = (lease: boolean): string => `
      - name: global
        policy: { algorithm: tokenBucket, capacity: ${CAPACITY}, refillPerSecond: 0.00000105 }
        key: { type: route }${lease ? `\n        lease: { maxOutstandingShare: ${SHARE}, leaseMs: 600000 }` : ''}`;
  const config = (lease: boolean, prefix: string): string => `
store: { type: redis, url: "redis://127.0.0.1:${redis.ports[0]}", prefix: "${prefix}", timeoutMs: 5000 }
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
      const { status, body } = await call(gateway.url(path));
      assert.ok(status === 200 || status === 429, `status ${status}: ${body}`);
      if (status === 200) admitted++;
    }
    return admitted;
  }

  /**
   * Starts `size` gateways on `yaml` together, or none: a start that fails stops the others. A
   * start may take minutes on a loaded machine (each process compiles its sources), and is not
   * what is tested here.
   */
  async function startAll(size: number, yaml: string): Promise<GatewayProcess[]> {
    const starts = await Promise.allSettled(
      Array.from({ length: size }, () => startGateway(yaml, { startTimeoutMs: 600_000 })),
    );
    const started = starts.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = starts.find((s) => s.status === 'rejected');
    if (failed === undefined) return started;
    await Promise.all(started.map((g) => g.stop(60_000)));
    throw failed.reason;
  }

  /** Sends requests to `path` on a per-request `gateway` until one is refused, and returns how many were admitted before it (the bucket does not refill: all later ones are refused too). */
  async function admittedUntilRefused(gateway: GatewayProcess, path: string): Promise<number> {
    for (let admitted = 0; admitted <= CAPACITY; admitted++) {
      const { status, body } = await call(gateway.url(path));
      assert.ok(status === 200 || status === 429, `status ${status}: ${body}`);
      if (status === 429) return admitted;
    }
    assert.fail(`${path}: more than ${CAPACITY} admitted`);
  }

  /** Runs `demand` against `gateways` on `path`, round by round, and returns each process's admitted count. */
  async function drive(gateways: readonly GatewayProcess[], path: string, demand: Demand): Promise<number[]> {
    const admitted = gateways.map(() => 0);
    for (let r = 0; r < demand.rounds; r++) {
      const got = await Promise.all(gateways.map((g, i) => send(g, path, demand.perRound[i]!)));
      got.forEach((n, i) => (admitted[i]! += n));
    }
    return admitted;
  }

  /**
   * Checks one run: no more than the bucket admitted, and every request of the rounds that ended
   * before the key can have been contended admitted. Until then the bucket keeps at least twice
   * MAX_OUTSTANDING (what was admitted, plus at most MAX_OUTSTANDING held, is taken from it, and
   * with these leases no unit expires unspent), so a process short of units is decided per request,
   * never refused: each process's admissions follow its demand, none starves.
   */
  function checkRun(what: string, admitted: readonly number[], demand: Demand): number {
    const total = admitted.reduce((a, b) => a + b, 0);
    assert.ok(total <= CAPACITY, `${what}: ${admitted.join(' + ')} = ${total} admitted of ${CAPACITY}`);
    const perRound = demand.perRound.reduce((a, b) => a + b, 0);
    const openRounds = Math.floor((CAPACITY - 3 * MAX_OUTSTANDING) / perRound);
    admitted.forEach((n, i) => {
      const owed = demand.perRound[i]! * openRounds;
      assert.ok(
        n >= owed,
        `${what}: process ${i} admitted ${n}, fewer than its ${owed} requests of the first ${openRounds} rounds`,
      );
    });
    return total;
  }

  /**
   * Starts `size` leasing gateways, runs the steady and the skewed demand on their own keys, stops
   * them (each gives back what it holds), then lets a per-request gateway admit the rest of each
   * key: with what the leases admitted, exactly the bucket, so no unit was lost or spent twice.
   */
  async function fleet(t: TestContext, size: number, steady: Demand, skewed: Demand): Promise<void> {
    const prefix = `fg-lease-${process.pid}-${size}:`;
    const gateways = await startAll(size, config(true, prefix));
    let steadyAdmitted: number[];
    let skewedAdmitted: number[];
    try {
      steadyAdmitted = await drive(gateways, '/steady/x', steady);
      skewedAdmitted = await drive(gateways, '/skewed/x', skewed);
    } finally {
      await Promise.all(gateways.map((g) => g.stop(60_000)));
    }
    const steadyTotal = checkRun('steady', steadyAdmitted, steady);
    const skewedTotal = checkRun('skewed', skewedAdmitted, skewed);
    const check = (await startAll(1, config(false, prefix)))[0]!;
    try {
      const steadyRest = await admittedUntilRefused(check, '/steady/x');
      const skewedRest = await admittedUntilRefused(check, '/skewed/x');
      t.diagnostic(
        `${size} processes: steady ${steadyAdmitted.join(' + ')} then ${steadyRest}; skewed ${skewedAdmitted.join(' + ')} then ${skewedRest}`,
      );
      assert.equal(steadyTotal + steadyRest, CAPACITY, 'steady: no unit lost or spent twice');
      assert.equal(skewedTotal + skewedRest, CAPACITY, 'skewed: no unit lost or spent twice');
    } finally {
      await check.stop();
    }
  }

  it('three admit no more than the limit, steady and skewed (80% on one), and give back what they held', (t) =>
    fleet(t, 3, steadyDemand(3, 150), skewedDemand(3, 8, 45)));

  it('eight admit no more than the limit, steady and skewed (80% on one), and give back what they held', (t) =>
    fleet(t, 8, steadyDemand(8, 50), skewedDemand(8, 28, 10)));
});
