import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencyLimiter, MemoryStore } from 'floodgate';
import { parseConfig } from '../src/config/load.js';
import { limiterOptionsOf } from '../src/config/overload.js';
import type { Admission } from '../src/gateway/decide.js';
import { Passage, enter, outcomeOf, type ShedReporter } from '../src/gateway/protect.js';
import type { UpstreamResult } from '../src/gateway/proxy.js';
import { RouteTable } from '../src/gateway/routes.js';

function yaml(limit: number, breakerOpenMs = 1000): string {
  return `
routes:
  - name: plain
    match: { path: /plain/* }
    upstream: http://127.0.0.1:1
  - name: api
    match: { path: /api/* }
    upstream: http://127.0.0.1:2
    concurrency: { limit: ${limit} }
    priority: { tiers: [critical, normal, batch], default: normal, reserveRatio: 0.25 }
  - name: health
    match: { path: /health }
    upstream: http://127.0.0.1:2
    routeTier: critical
upstreams:
  - url: http://127.0.0.1:2
    name: backend
    adaptive: { initialLimit: 8 }
    priority: { tiers: [critical, batch] }
    circuitBreaker: { trigger: { type: errorCount, count: 2 }, minCalls: 2, openMs: ${breakerOpenMs} }
`;
}

function tableOf(text: string, previous?: RouteTable): RouteTable {
  return RouteTable.build(parseConfig(text, 'test.yaml', {}), { store: new MemoryStore(), env: {}, previous });
}

function recorder(): ShedReporter & { seen: string[] } {
  const seen: string[] = [];
  return { seen, shed: (scope, tier, reason) => seen.push(`${scope}/${tier}/${reason}`) };
}

const OK: UpstreamResult = { status: 200, durationMs: 5, error: undefined, failure: undefined };

describe('gateway overload guards, without a socket', () => {
  it("takes the wait line's order and CoDel's parameters from the section, and leaves them to the library when absent", () => {
    const config = parseConfig(
      `routes:
  - name: a
    match: { path: /a/* }
    upstream: http://127.0.0.1:1
    concurrency: { limit: 4, maxQueue: 8, order: fifo }
  - name: b
    match: { path: /b/* }
    upstream: http://127.0.0.1:1
    adaptive: { maxQueue: 8, codel: { intervalMs: 50, targetMs: 2 } }
  - name: c
    match: { path: /c/* }
    upstream: http://127.0.0.1:1
    adaptive: {}
`,
      'test.yaml',
      {},
    );
    const [a, b, c] = config.routes.map((route) => limiterOptionsOf(route)!);
    assert.equal(a!.order, 'fifo');
    assert.deepEqual(b!.codel, { intervalMs: 50, targetMs: 2 });
    assert.equal('order' in c!, false);
    assert.equal('codel' in c!, false);
    assert.throws(
      () =>
        parseConfig(
          'routes:\n  - name: d\n    upstream: http://127.0.0.1:1\n    concurrency: { limit: 4, order: lifo }\n',
          'test.yaml',
          {},
        ),
      /order/,
    );
    for (const options of [a, b, c]) assert.ok(new ConcurrencyLimiter(options!));
  });

  it('gives a route without protection no guards: its requests pay nothing for them', () => {
    const table = tableOf(yaml(2));
    assert.equal(table.routes[0]!.guards, undefined);
    assert.deepEqual(
      table.routes[1]!.guards!.map((s) => s.guard.scope),
      ['route:api', 'upstream:backend'],
    );
    assert.deepEqual(
      table.routes[2]!.guards!.map((s) => s.guard.scope),
      ['upstream:backend'],
      "a route with no section of its own passes its upstream's guard only",
    );
  });

  it('admits and sheds at once (no promise) when no limit waits, and holds nothing for a refused request', () => {
    const route = tableOf(yaml(2)).routes[1]!;
    const reporter = recorder();
    const passages = [0, 1, 2].map(() =>
      enter(route.guards!, { 'x-priority': 'critical' }, { reporter, signal: undefined }),
    );
    assert.ok(
      passages.every((p) => !(p instanceof Promise)),
      'answered synchronously',
    );
    assert.ok(passages[0] instanceof Passage && passages[1] instanceof Passage);
    const shed = passages[2] as Admission;
    assert.equal(shed.allowed, false);
    assert.equal(shed.status, 503);
    assert.deepEqual(reporter.seen, ['route:api/critical/limit']);
    const [own, shared] = route.guards!.map((s) => s.guard.limiter!);
    assert.deepEqual([own!.inFlight, shared!.inFlight], [2, 2], 'the shed request holds no slot of either');
    (passages[0] as Passage).settle(OK);
    (passages[0] as Passage).settle(OK);
    (passages[1] as Passage).abandon();
    assert.deepEqual([own!.inFlight, shared!.inFlight], [0, 0], 'each passage gave its slots back once');
  });

  it('reads the tier from the header (unknown: the default), or from routeTier', () => {
    const table = tableOf(yaml(4));
    const [own, shared] = table.routes[1]!.guards!;
    assert.equal(own!.guard.tierOf('critical'), 0);
    assert.equal(own!.guard.tierOf('batch'), 2);
    assert.equal(own!.guard.tierOf('nonsense'), 1, 'the default tier, normal');
    assert.equal(own!.guard.tierOf(undefined), 1);
    assert.equal(shared!.guard.tierOf(undefined), 1, 'without a default, the last tier');
    assert.equal(table.routes[2]!.guards![0]!.fixedTier, 0, 'routeTier pins critical');
  });

  it('keeps on reload the limiter and breaker of a scope whose section did not change; a changed one is new, and old permits go back to the old one', () => {
    const first = tableOf(yaml(2));
    const route = first.routes[1]!;
    const held = enter(route.guards!, {}, { reporter: recorder(), signal: undefined }) as Passage;
    const oldOwn = route.guards![0]!.guard.limiter!;
    const shared = route.guards![1]!.guard;
    const second = tableOf(yaml(3), first);
    const [own2, shared2] = second.routes[1]!.guards!.map((s) => s.guard);
    assert.notEqual(own2!.limiter, oldOwn, "the route's limit changed: a new limiter");
    assert.equal(own2!.limiter!.inFlight, 0);
    assert.equal(
      shared2!.limiter,
      shared.limiter,
      "the upstream's section did not change: the same limiter, and what it learned",
    );
    assert.equal(shared2!.breaker, shared.breaker);
    held.settle(OK);
    assert.equal(oldOwn.inFlight, 0, 'the permit went back to the limiter it came from');
    assert.equal(shared.limiter!.inFlight, 0);
    const third = tableOf(yaml(3, 2000), second);
    assert.notEqual(
      third.routes[1]!.guards![1]!.guard.breaker,
      shared.breaker,
      'a changed circuitBreaker section is a new breaker',
    );
    assert.equal(third.routes[1]!.guards![1]!.guard.limiter, shared.limiter, "while the upstream's limiter stays");
  });

  it('refuses with 503 while a circuit is open, without taking a slot', () => {
    const route = tableOf(yaml(10)).routes[1]!;
    const failed: UpstreamResult = { status: 500, durationMs: 1, error: undefined, failure: undefined };
    for (let i = 0; i < 2; i++)
      (enter(route.guards!, {}, { reporter: recorder(), signal: undefined }) as Passage).settle(failed);
    const reporter = recorder();
    const refused = enter(route.guards!, {}, { reporter, signal: undefined }) as Admission;
    assert.equal(refused.status, 503);
    assert.ok(Number(refused.headers.find(([n]) => n === 'retry-after')![1]) >= 1);
    assert.match(refused.body!, /circuit breaker is open/);
    assert.deepEqual(reporter.seen, ['upstream:backend/batch/circuit-open']);
    assert.equal(route.guards![0]!.guard.limiter!.inFlight, 0);
  });

  it('lets a request wait for a slot when maxQueue allows, and sheds it as aborted when its client leaves while waiting', async () => {
    const route = tableOf(`
routes:
  - name: line
    upstream: http://127.0.0.1:3
    concurrency: { limit: 1, maxQueue: 2, maxWaitMs: 5000 }
`).routes[0]!;
    const reporter = recorder();
    const first = enter(route.guards!, {}, { reporter, signal: new AbortController().signal }) as Passage;
    const waiting = enter(route.guards!, {}, { reporter, signal: new AbortController().signal });
    assert.ok(waiting instanceof Promise, 'the second waits');
    const leaving = new AbortController();
    const gone = enter(route.guards!, {}, { reporter, signal: leaving.signal });
    leaving.abort();
    const abandoned = (await gone) as Admission;
    assert.equal(abandoned.allowed, false);
    first.settle(OK);
    const second = await waiting;
    assert.ok(second instanceof Passage, 'the waiter got the slot the first gave back');
    second.settle(OK);
    assert.equal(route.guards![0]!.guard.limiter!.inFlight, 0);
    assert.deepEqual(reporter.seen, ['route:line/default/aborted']);
  });

  it("tells the limiter what each ending says of the upstream's load", () => {
    const fixed = new ConcurrencyLimiter({ limit: 1 });
    const r = (status: number, failure?: UpstreamResult['failure']): UpstreamResult => ({
      status,
      durationMs: 10,
      error: failure,
      failure,
    });
    const table: [UpstreamResult, string][] = [
      [r(200), 'success'],
      [r(404), 'success'],
      [r(503), 'drop'],
      [r(429), 'drop'],
      [r(500), 'ignore'],
      [r(504, 'timeout'), 'drop'],
      [r(502, 'connect'), 'drop'],
      [r(502, 'aborted'), 'ignore'],
      [r(413, 'too-large'), 'ignore'],
      [r(502, 'other'), 'ignore'],
    ];
    for (const [result, outcome] of table)
      assert.equal(outcomeOf(result, fixed), outcome, `${result.status} ${String(result.failure)}`);
  });
});
