import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { MemoryStore, type Store } from 'floodgate';
import { ClientIpResolver } from 'floodgate/http';
import { parseConfig } from '../src/config/load.js';
import { admit, type Admission } from '../src/gateway/decide.js';
import type { DecisionReporter, RuleOutcome } from '../src/outcomes.js';
import { ProxyRequest } from '../src/gateway/request.js';
import { RouteTable, type CompiledRoute } from '../src/gateway/routes.js';
import { laterStore } from '../../floodgate/test/support/later-store.js';

const YAML = `
store: { type: memory }
routes:
  - name: api
    match: { path: /api/* }
    upstream: http://127.0.0.1:1
    rules:
      - name: watch
        mode: shadow
        policy: { algorithm: tokenBucket, capacity: 1, refillPerSecond: 0.001 }
        key: { type: ip }
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 2, refillPerSecond: 0.001 }
        key: { type: ip }
      - name: per-route
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 0.001 }
        key: { type: route }
  - name: keyed
    match: { path: /keyed/* }
    upstream: http://127.0.0.1:1
    rules:
      - name: per-key
        policy: { algorithm: tokenBucket, capacity: 10, refillPerSecond: 0.001 }
        key: { type: header, name: x-api-key, onAbsent: skip }
      - name: per-client
        policy: { algorithm: fixedWindow, limit: 20, windowMs: 60000 }
        key: { type: ip }
  - name: lone
    match: { path: /lone/* }
    upstream: http://127.0.0.1:1
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: 1, refillPerSecond: 0.001 }
        key: { type: ip }
  - name: waits
    upstream: http://127.0.0.1:1
    rules:
      - name: line
        mode: queue
        policy: { algorithm: tokenBucket, capacity: 5, refillPerSecond: 0.001 }
        key: { type: route }
`;

function tableOf(store: Store = new MemoryStore()): RouteTable {
  return RouteTable.build(parseConfig(YAML, 'test.yaml', {}), { store, env: {} });
}

function requestOn(route: CompiledRoute, peer: string, headers: Record<string, string> = {}): ProxyRequest {
  const raw = {
    method: 'GET',
    url: '/x',
    headers: { host: 'gw', ...headers },
    socket: { remoteAddress: peer },
  } as unknown as IncomingMessage;
  return new ProxyRequest(raw, new ClientIpResolver({ trustProxy: false }, { warn: () => {} }), route.name, {});
}

function recorder(): { reporter: DecisionReporter; seen: string[] } {
  const seen: string[] = [];
  const reporter: DecisionReporter = {
    outcome: (_route: string, rule: string, outcome: RuleOutcome) => seen.push(`${rule}:${outcome}`),
    queueDepth: () => {},
  };
  return { reporter, seen };
}

describe('gateway admission on the memory store', () => {
  it('decides a route of enforced and shadow rules at once (no promise), with the same answers and reports', () => {
    const route = tableOf().routes[0]!;
    assert.equal(route.synchronous, true);
    const { reporter, seen } = recorder();
    const options = { reporter, onStoreError: 'fail-open' as const, signal: undefined };
    const answers: Admission[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = admit(route, requestOn(route, '10.0.0.1'), options);
      assert.ok(!(answer instanceof Promise), 'a memory-store route is admitted without a promise');
      answers.push(answer as Admission);
    }
    assert.deepEqual(
      answers.map((a) => [a.allowed, a.status]),
      [
        [true, 0],
        [true, 0],
        [false, 429],
      ],
    );
    assert.match(
      answers[0]!.headers.find(([n]) => n === 'ratelimit')![1],
      /"per-client";r=1;t=\d+, "per-route";r=99;t=\d+/,
    );
    // The refused request charged no rule: the route rule still shows 98 left after two admissions.
    assert.match(
      answers[2]!.headers.find(([n]) => n === 'ratelimit')![1],
      /"per-client";r=0;t=\d+, "per-route";r=98;t=\d+/,
    );
    assert.ok(answers[2]!.headers.some(([n]) => n === 'retry-after'));
    assert.deepEqual(seen, [
      'watch:shadow_admitted',
      'per-client:admitted',
      'per-route:admitted',
      'watch:shadow_limited',
      'per-client:near_limit',
      'per-route:admitted',
      'watch:shadow_limited',
      'per-client:limited',
    ]);
    // Another client has its own per-client budget.
    const other = admit(route, requestOn(route, '10.0.0.2'), options) as Admission;
    assert.equal(other.allowed, true);
  });

  it('names in RateLimit-Policy only the rules that applied, in config order', () => {
    const route = tableOf().routes[1]!;
    const options = { ...recorder(), onStoreError: 'fail-open' as const, signal: undefined };
    const policyOf = (a: Admission): string | undefined => a.headers.find(([n]) => n === 'ratelimit-policy')?.[1];
    const both = admit(route, requestOn(route, '10.0.0.1', { 'x-api-key': 'k1' }), options) as Admission;
    assert.equal(policyOf(both), '"per-key";q=10;w=10000, "per-client";q=20;w=60');
    const ipOnly = admit(route, requestOn(route, '10.0.0.1'), options) as Admission;
    assert.equal(policyOf(ipOnly), '"per-client";q=20;w=60');
    assert.match(ipOnly.headers.find(([n]) => n === 'ratelimit')![1], /^"per-client";r=18;t=\d+$/);
  });

  it("answers a lone rule's refusals of one client with its fields, reporting each, and another client's with its own key", () => {
    const route = tableOf().routes[2]!;
    const { reporter, seen } = recorder();
    const options = { reporter, onStoreError: 'fail-open' as const, signal: undefined };
    const decide = (peer: string): Admission => admit(route, requestOn(route, peer), options) as Admission;
    const first = decide('10.0.0.1');
    assert.equal(first.allowed, true);
    assert.deepEqual(
      first.charged?.map((c) => c.key),
      [route.enforce[0]!.keyOf('ip:10.0.0.1')],
    );
    const refusals = [decide('10.0.0.1'), decide('10.0.0.1')];
    for (const refusal of refusals) {
      assert.equal(refusal.status, 429);
      // A token in 1000 s: the wait rounds up to 1000 s for the whole of this test (under a second).
      assert.deepEqual(refusal.headers, [
        ['ratelimit-policy', '"per-client";q=1;w=1000'],
        ['ratelimit', '"per-client";r=0;t=1000'],
        ['retry-after', '1000'],
        ['cache-control', 'no-store'],
        ['content-type', 'application/problem+json'],
      ]);
      assert.match(refusal.body!, /"violated-policies":\["per-client"\]/);
      assert.deepEqual(
        refusal.refusedBy?.map((c) => c.key),
        [route.enforce[0]!.keyOf('ip:10.0.0.1')],
      );
    }
    assert.equal(decide('10.0.0.2').allowed, true);
    const other = decide('10.0.0.2');
    assert.equal(other.status, 429);
    assert.deepEqual(
      other.refusedBy?.map((c) => c.key),
      [route.enforce[0]!.keyOf('ip:10.0.0.2')],
    );
    assert.deepEqual(seen, [
      'per-client:near_limit',
      'per-client:limited',
      'per-client:limited',
      'per-client:near_limit',
      'per-client:limited',
    ]);
  });

  it("answers a lone rule on an asynchronous store with a promise of the memory store's answers", async () => {
    const later = tableOf(laterStore()).routes[2]!;
    const memory = tableOf().routes[2]!;
    const run = (route: CompiledRoute) => {
      const { reporter, seen } = recorder();
      const options = { reporter, onStoreError: 'fail-open' as const, signal: undefined };
      return { seen, decide: (peer: string) => admit(route, requestOn(route, peer), options) };
    };
    const a = run(later);
    const b = run(memory);
    for (const peer of ['10.0.0.1', '10.0.0.1', '10.0.0.1', '10.0.0.2']) {
      const answer = a.decide(peer);
      assert.ok(answer instanceof Promise, 'an asynchronous store answers with a promise');
      const got = await answer;
      const want = b.decide(peer) as Admission;
      assert.deepEqual([got.allowed, got.status, got.body], [want.allowed, want.status, want.body]);
      // The wait before a token comes back is counted from each table's own clock reading.
      const fields = (x: Admission) => x.headers.map(([n, v]) => [n, v.replace(/t=\d+/, 't=_')]);
      assert.deepEqual(fields(got), fields(want));
      assert.deepEqual(
        (got.charged ?? got.refusedBy)?.map((c) => c.key),
        (want.charged ?? want.refusedBy)?.map((c) => c.key),
      );
    }
    assert.deepEqual(a.seen, b.seen);
    assert.deepEqual(a.seen, [
      'per-client:near_limit',
      'per-client:limited',
      'per-client:limited',
      'per-client:near_limit',
    ]);
  });

  it("answers a lone rule whose store is down by the limiter's failure policy, marked degraded", async () => {
    const route = tableOf(laterStore(true)).routes[2]!;
    const { reporter, seen } = recorder();
    const answer = await admit(route, requestOn(route, '10.0.0.1'), {
      reporter,
      onStoreError: 'fail-closed',
      signal: undefined,
    });
    assert.equal(answer.allowed, true);
    assert.ok(answer.headers.some(([n, v]) => n === 'floodgate-degraded' && v === 'fail-open'));
    assert.deepEqual(seen, ['per-client:fail_open']);
  });

  it('leaves a route with a queued rule to the asynchronous path', async () => {
    const route = tableOf().routes[3]!;
    assert.equal(route.synchronous, false);
    const { reporter, seen } = recorder();
    const answer = admit(route, requestOn(route, '10.0.0.1'), {
      reporter,
      onStoreError: 'fail-open',
      signal: undefined,
    });
    assert.ok(answer instanceof Promise);
    assert.equal((await answer).allowed, true);
    assert.deepEqual(seen, ['line:queued']);
  });
});
