/**
 * A smooth rule in the gateway's config and in one process: the config's mistakes reported at
 * file:line with a fix; the in-process pace (the memory store's) giving the waits of the library's
 * SmoothRateLimiter on a manual clock, refusing a turn past maxWaitMs, and giving a turn back when
 * its client leaves while it is still the latest; and admission on a route of the memory store.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { FloodgateError, ManualClock, MemoryStore, SmoothRateLimiter } from 'floodgate';
import { ClientIpResolver } from 'floodgate/http';
import { parseConfig } from '../src/config/load.js';
import { ConfigError, type ConfigProblem } from '../src/config/problems.js';
import { admit, type Admission } from '../src/gateway/decide.js';
import { ProxyRequest } from '../src/gateway/request.js';
import { RouteTable } from '../src/gateway/routes.js';
import { LocalSmoothPace } from '../src/gateway/smooth-pace.js';

function rulesYaml(rule: string): string {
  return `routes:
  - name: partner
    upstream: http://127.0.0.1:3000
    rules:
${rule}`;
}

function problemsOf(yaml: string): readonly ConfigProblem[] {
  try {
    parseConfig(yaml, 'smooth.yaml', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('a smooth rule in the config', () => {
  it('loads bursty and warming-up rules in queue mode on the route key', () => {
    const config = parseConfig(
      rulesYaml(`      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: 10, maxBurstSeconds: 0.5 }
        key: { type: route }
        mode: queue
        queue: { maxWaitMs: 2000 }
      - name: warm
        policy: { algorithm: smoothWarmingUp, permitsPerSecond: 5, warmupMs: 3000, coldFactor: 4 }
        key: { type: route }
        mode: queue
`),
      'smooth.yaml',
      {},
    );
    assert.deepEqual(
      config.routes[0]!.rules.map((r) => r.policy),
      [
        { algorithm: 'smoothBursty', permitsPerSecond: 10, maxBurstSeconds: 0.5 },
        { algorithm: 'smoothWarmingUp', permitsPerSecond: 5, warmupMs: 3000, coldFactor: 4 },
      ],
    );
  });

  const mistakes: readonly (readonly [
    what: string,
    rule: string,
    line: number,
    path: string,
    says: string,
    fix: string,
  ])[] = [
    [
      'enforce mode',
      `      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: 10 }
        key: { type: route }
`,
      5,
      'routes[0].rules[0].mode',
      'a smoothBursty policy paces requests, each waiting its turn, so it needs mode: queue (the rule\'s mode is "enforce")',
      'set mode: queue',
    ],
    [
      'a per-client key',
      `      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: 10 }
        key: { type: header, name: x-api-key }
        mode: queue
`,
      7,
      'routes[0].rules[0].key',
      'paces the route as a whole (every gateway process on the store together), not each header apart',
      'set key: { type: route }',
    ],
    [
      'a fractional cost',
      `      - name: even
        policy: { algorithm: smoothWarmingUp, permitsPerSecond: 10, warmupMs: 1000 }
        key: { type: route }
        mode: queue
        cost: 1.5
`,
      9,
      'routes[0].rules[0].cost',
      'reserves whole permits, so a cost of 1.5 cannot be reserved',
      'a whole number of at least 1',
    ],
    [
      'a warm-up below a microsecond',
      `      - name: even
        policy: { algorithm: smoothWarmingUp, permitsPerSecond: 10, warmupMs: 0.0001 }
        key: { type: route }
        mode: queue
`,
      6,
      'routes[0].rules[0].policy.warmupMs',
      'warmupMs',
      'change the number',
    ],
    [
      'a cold factor below 1',
      `      - name: even
        policy: { algorithm: smoothWarmingUp, permitsPerSecond: 10, warmupMs: 1000, coldFactor: 0.5 }
        key: { type: route }
        mode: queue
`,
      6,
      'routes[0].rules[0].policy.coldFactor',
      'Too small',
      '',
    ],
    [
      'an unknown option',
      `      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: 10, warmupMs: 1000 }
        key: { type: route }
        mode: queue
`,
      6,
      'routes[0].rules[0].policy.warmupMs',
      'unknown key',
      '',
    ],
  ];
  for (const [what, rule, line, path, says, fix] of mistakes) {
    it(`reports ${what} at its line with a fix`, () => {
      const problems = problemsOf(rulesYaml(rule));
      assert.equal(problems.length, 1, JSON.stringify(problems));
      const p = problems[0]!;
      assert.equal(p.file, 'smooth.yaml');
      assert.equal(p.path, path);
      assert.equal(p.line, line);
      assert.ok(p.message.includes(says), p.message);
      assert.ok(p.hint.includes(fix), p.hint);
    });
  }
});

/** takes runs `acquire` on `pace` at the clock's time and returns the ms waited, moving the clock on to the turn. */
async function waitedMs(pace: LocalSmoothPace, clock: ManualClock, permits: number): Promise<number> {
  const start = clock.now();
  let done = false;
  const turn = pace.acquire(permits, { maxWaitMs: 1e9 }).then(() => (done = true));
  await Promise.resolve();
  while (!done) {
    clock.advance(1);
    await Promise.resolve();
    await Promise.resolve();
  }
  await turn;
  return clock.now() - start;
}

describe('the in-process pace of a smooth rule', () => {
  it("gives the library's SmoothRateLimiter's waits, bursty and warming up, with idle time between", async () => {
    for (const kind of ['bursty', 'warmingUp'] as const) {
      const clock = new ManualClock(0);
      const model =
        kind === 'bursty'
          ? ({ kind, maxBurstSeconds: 0.5 } as const)
          : ({ kind, warmupMicros: 2_000_000, coldFactor: 3 } as const);
      const pace = new LocalSmoothPace(model, 10, clock, clock);
      const twin =
        kind === 'bursty'
          ? SmoothRateLimiter.bursty(10, { maxBurstSeconds: 0.5, clock })
          : SmoothRateLimiter.warmingUp(10, 2000, { coldFactor: 3, clock });
      const expected: number[] = [];
      const actual: number[] = [];
      const steps = [1, 1, 3, 1, -700, 1, 1, 2, -1500, 1, 1, 1, 1];
      for (const step of steps) {
        if (step < 0) {
          clock.advance(-step);
          continue;
        }
        expected.push(Math.ceil(twin.reserveAt(step, clock.now() * 1000) / 1000));
        actual.push(await waitedMs(pace, clock, step));
      }
      assert.deepEqual(actual, expected, kind);
      assert.ok(expected.some((w) => w > 0) && expected.some((w) => w === 0), 'the steps wait and pass free');
    }
  });

  it('refuses, reserving nothing, a turn further than maxWaitMs away', async () => {
    const clock = new ManualClock(0);
    const pace = new LocalSmoothPace({ kind: 'bursty', maxBurstSeconds: 0 }, 10, clock, clock);
    await pace.acquire(1, { maxWaitMs: 0 });
    const second = pace.acquire(1, { maxWaitMs: 150 });
    await assert.rejects(pace.acquire(1, { maxWaitMs: 150 }), (e: unknown) => {
      return e instanceof FloodgateError && e.code === 'WAIT_TIMEOUT' && e.option === 'maxWaitMs';
    });
    assert.equal(pace.waiting, 1);
    clock.advance(100);
    assert.equal(await second, 0.1);
    assert.equal(await pace.tryAcquire(1, 99), false);
    assert.equal(pace.waiting, 0);
  });

  it('gives back the turn of a client that left while it was the latest and not yet due, and only then', async () => {
    const clock = new ManualClock(0);
    const pace = new LocalSmoothPace({ kind: 'bursty', maxBurstSeconds: 0 }, 10, clock, clock);
    await pace.acquire(1, { maxWaitMs: 0 });
    const leaving = new AbortController();
    const left = pace.acquire(1, { maxWaitMs: 1000, signal: leaving.signal });
    clock.advance(20);
    leaving.abort();
    await assert.rejects(left, (e: unknown) => e instanceof FloodgateError && e.code === 'ABORTED');
    assert.equal(pace.waiting, 0);
    // Its turn (100 ms) is free again: the next request waits 80 ms, not 180.
    const next = pace.acquire(1, { maxWaitMs: 1000 });
    clock.advance(80);
    assert.equal(await next, 0.08);

    // A waiter with a later one behind it keeps its turn spent: the later one counts on its place.
    const middle = new AbortController();
    const kept = pace.acquire(1, { maxWaitMs: 1000, signal: middle.signal });
    const last = pace.acquire(1, { maxWaitMs: 1000 });
    middle.abort();
    await assert.rejects(kept);
    assert.equal(pace.waiting, 1);
    clock.advance(200);
    assert.equal(await last, 0.2);
  });
});

describe('a smooth rule on a route of the memory store', () => {
  const YAML = `routes:
  - name: partner
    upstream: http://127.0.0.1:3000
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 1 }
      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: 2, maxBurstSeconds: 0 }
        key: { type: route }
        mode: queue
        queue: { maxWaitMs: 600 }
`;
  const reporter = { outcome: (): void => {}, queueDepth: (): void => {} };

  function request(): ProxyRequest {
    const raw = { method: 'GET', url: '/x', headers: { host: 'gw' }, socket: { remoteAddress: '127.0.0.1' } };
    const resolver = new ClientIpResolver({ trustProxy: false }, { warn: () => {} });
    return new ProxyRequest(raw as unknown as IncomingMessage, resolver, 'partner', {});
  }

  it("admits the first at once, the next after its turn, refuses one past maxWaitMs with 429 and the rule's headers, and refunds the counted rule", async () => {
    const table = RouteTable.build(parseConfig(YAML, 'test.yaml', {}), { store: new MemoryStore(), env: {} });
    const route = table.routes[0]!;
    assert.equal(route.synchronous, false);
    const options = { reporter, onStoreError: 'fail-open' as const, signal: undefined };
    const first = (await admit(route, request(), options)) as Admission;
    assert.equal(first.allowed, true);
    const second = admit(route, request(), options);
    const third = (await admit(route, request(), options)) as Admission;
    assert.equal(third.status, 429);
    const headers = Object.fromEntries(third.headers);
    assert.equal(headers['retry-after'], '1');
    assert.equal(headers['ratelimit-policy'], '"even";q=2;w=1');
    assert.equal(headers.ratelimit, '"even";r=0;t=1');
    assert.match(third.body ?? '', /more than 600 ms away/);
    assert.equal((await second).allowed, true);
    // Two admitted, one refused and refunded: the token bucket holds 98 of 100.
    const counted = route.rules[0]!;
    const key = counted.keyOf(counted.identity(request()) as string);
    assert.equal((await counted.limiter.peek(key, { cost: 0 })).remaining, 98);
  });
});

describe('a smooth rule across reloads and with a full line', () => {
  const yaml = (rate: number, maxQueue: number): string => `routes:
  - name: partner
    upstream: http://127.0.0.1:3000
    rules:
      - name: even
        policy: { algorithm: smoothBursty, permitsPerSecond: ${rate}, maxBurstSeconds: 0 }
        key: { type: route }
        mode: queue
        queue: { maxWaitMs: 5000, maxQueue: ${maxQueue} }
`;
  const build = (text: string, previous?: RouteTable): RouteTable =>
    RouteTable.build(parseConfig(text, 'test.yaml', {}), {
      store: new MemoryStore(),
      env: {},
      ...(previous === undefined ? {} : { previous }),
    });

  it('keeps the pace (and its line) when the policy is unchanged, and starts a new one when it changed', () => {
    const first = build(yaml(2, 10));
    const same = build(yaml(2, 5), first);
    const faster = build(yaml(4, 10), same);
    const pace = (t: RouteTable) => t.routes[0]!.smooth[0]!.pace;
    assert.equal(pace(same), pace(first));
    assert.notEqual(pace(faster), pace(first));
    assert.equal(same.routes[0]!.smooth[0]!.maxQueue, 5);
  });

  it('past maxQueue waiting, lets through only a request whose turn is free now', async () => {
    const route = build(yaml(2, 0)).routes[0]!;
    const reporter = { outcome: (): void => {}, queueDepth: (): void => {} };
    const options = { reporter, onStoreError: 'fail-open' as const, signal: undefined };
    const raw = { method: 'GET', url: '/x', headers: { host: 'gw' }, socket: { remoteAddress: '127.0.0.1' } };
    const req = new ProxyRequest(
      raw as unknown as IncomingMessage,
      new ClientIpResolver({ trustProxy: false }, { warn: () => {} }),
      'partner',
      {},
    );
    assert.equal((await admit(route, req, options)).allowed, true, 'the first turn is free');
    const second = await admit(route, req, options);
    assert.equal(second.status, 429);
    assert.match(second.body ?? '', /the line of requests waiting here is full \(maxQueue 0\) and no turn is free now/);
  });
});
