import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, metricValue, type Reply } from './support/http.js';
import { closedPort } from './support/ports.js';
import { startSlotUpstream, type SlotUpstream } from './support/slot-upstream.js';

/** Polls `check` every 20 ms until it holds; fails naming `what` when it has not after 15 s (a bound, not a measurement). */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 750; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`never: ${what}`);
}

function configFor(up: Record<'bulk' | 'tiered' | 'fragile' | 'learned' | 'shared', string>, dead: string): string {
  return `
limits: { upstreamTimeoutMs: 1500, connectTimeoutMs: 1000, headersTimeoutMs: 2000, requestTimeoutMs: 20000 }
routes:
  - name: bulkhead
    match: { path: /bulk/* }
    upstream: ${up.bulk}
    concurrency: { limit: 2 }
  - name: dead
    match: { path: /dead/* }
    upstream: ${dead}
    concurrency: { limit: 2 }
  - name: tiered
    match: { path: /tiered/* }
    upstream: ${up.tiered}
    concurrency: { limit: 4 }
    priority: { tiers: [critical, batch], header: x-priority, default: batch, reserveRatio: 0.5 }
    shed: { status: 429 }
  - name: tiered-health
    match: { path: /health }
    upstream: ${up.tiered}
    concurrency: { limit: 4 }
    priority: { tiers: [critical, batch] }
    routeTier: critical
  - name: fragile
    match: { path: /fragile/* }
    upstream: ${up.fragile}
    circuitBreaker: { trigger: { type: errorCount, count: 3 }, minCalls: 3, openMs: 800 }
  - name: learned
    match: { path: /learned/* }
    upstream: ${up.learned}
    adaptive: { initialLimit: 30, minLimit: 2, maxLimit: 30, windowMs: 100, probeIntervalMs: 1000 }
  - name: shared-a
    match: { path: /shared-a/* }
    upstream: ${up.shared}
  - name: shared-b
    match: { path: /shared-b/* }
    upstream: ${up.shared}
upstreams:
  - url: ${up.shared}
    name: shared
    concurrency: { limit: 1 }
`;
}

describe('overload protection in floodgate serve (a gateway process, slot-service upstream processes, a real client)', () => {
  const ups = {} as Record<'bulk' | 'tiered' | 'fragile' | 'learned' | 'shared', SlotUpstream>;
  let origins: Record<keyof typeof ups, string>;
  let dead: string;
  let gw: GatewayProcess;
  const scrape = async (): Promise<string> => (await call(gw.adminUrl('/metrics'))).body;
  const gauge = async (name: string, scope: string): Promise<number> => metricValue(await scrape(), name, { scope });

  before(async () => {
    const started = await Promise.all([
      startSlotUpstream({ slots: 4, serviceMs: 20 }),
      startSlotUpstream({ slots: 8, serviceMs: 20 }),
      startSlotUpstream({ slots: 4, serviceMs: 5 }),
      startSlotUpstream({ slots: 4, serviceMs: 10 }),
      startSlotUpstream({ slots: 4, serviceMs: 5 }),
    ]);
    [ups.bulk, ups.tiered, ups.fragile, ups.learned, ups.shared] = started;
    origins = Object.fromEntries(Object.entries(ups).map(([k, u]) => [k, u.origin])) as Record<
      keyof typeof ups,
      string
    >;
    dead = `http://127.0.0.1:${await closedPort()}`;
    gw = await startGateway(configFor(origins, dead));
    await gw.waitForLog('ready');
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly on SIGTERM');
    await Promise.all(Object.values(ups).map((u) => u.stop()));
  });

  it('a concurrency limit of 2 sheds the third concurrent request at once with 503, Retry-After and problem+json, never sending it upstream', async () => {
    await ups.bulk.control({ hang: true });
    let firstTwoDone = false;
    const held = Promise.all([call(gw.url('/bulk/a')), call(gw.url('/bulk/b'))]).finally(() => (firstTwoDone = true));
    await until('the upstream holds the first two', async () => (await ups.bulk.stats()).open === 2);
    const shed = await call(gw.url('/bulk/c'));
    assert.equal(firstTwoDone, false, 'the shed answer came while the two admitted requests were still in flight');
    assert.equal(shed.status, 503);
    assert.equal(shed.headers['content-type'], 'application/problem+json');
    assert.ok(
      Number(shed.headers['retry-after']) >= 1,
      `Retry-After in whole seconds, at least 1: ${String(shed.headers['retry-after'])}`,
    );
    const body = JSON.parse(shed.body) as Record<string, unknown>;
    assert.equal(body.status, 503);
    assert.match(String(body.type), /temporary-reduced-capacity/);
    assert.match(String(body.title), /capacity/);
    assert.deepEqual(body['violated-policies'], ['concurrency']);
    assert.equal((await ups.bulk.stats()).byPath['/bulk/c'], undefined, 'the shed request never reached the upstream');
    assert.equal(await gauge('floodgate_concurrency_in_flight', 'route:bulkhead'), 2);
    assert.equal(
      metricValue(await scrape(), 'floodgate_concurrency_shed_total', {
        scope: 'route:bulkhead',
        tier: 'default',
        reason: 'limit',
      }),
      1,
    );
    await ups.bulk.control({ hang: false });
    assert.deepEqual(
      (await held).map((r) => r.status),
      [200, 200],
    );
    await until(
      'both slots are free again',
      async () => (await gauge('floodgate_concurrency_in_flight', 'route:bulkhead')) === 0,
    );
    assert.equal((await call(gw.url('/bulk/d'))).status, 200);
  });

  it('gives the slots back after an upstream timeout, an upstream error, a refused connection and a client that left', async () => {
    await ups.bulk.control({ hang: true });
    const timedOut = await Promise.all([call(gw.url('/bulk/t1')), call(gw.url('/bulk/t2'))]);
    assert.deepEqual(
      timedOut.map((r) => r.status),
      [504, 504],
    );
    await ups.bulk.control({ hang: false, errorStatus: 500 });
    assert.equal((await call(gw.url('/bulk/e1'))).status, 500);
    await ups.bulk.control({ errorStatus: null });
    assert.deepEqual(
      [
        (await call(gw.url('/dead/x'))).status,
        (await call(gw.url('/dead/y'))).status,
        (await call(gw.url('/dead/z'))).status,
      ],
      [502, 502, 502],
    );
    await ups.bulk.control({ hang: true });
    const abort = new AbortController();
    const leaving = request(gw.url('/bulk/gone'), { signal: abort.signal }).catch((err: unknown) => err);
    await until('the upstream holds the request', async () => (await ups.bulk.stats()).byPath['/bulk/gone'] === 1);
    abort.abort();
    await leaving;
    await until(
      "the client's slot is free again",
      async () => (await gauge('floodgate_concurrency_in_flight', 'route:bulkhead')) === 0,
    );
    await ups.bulk.control({ hang: false });
    assert.equal(await gauge('floodgate_concurrency_in_flight', 'route:dead'), 0);
    const two = await Promise.all([call(gw.url('/bulk/after-1')), call(gw.url('/bulk/after-2'))]);
    assert.deepEqual(
      two.map((r) => r.status),
      [200, 200],
      'both slots can be taken again',
    );
  });

  it('with tiers [critical, batch], lets critical requests through while batch ones are shed (with the configured 429)', async () => {
    await ups.tiered.control({ hang: true });
    const batch = [call(gw.url('/tiered/b1')), call(gw.url('/tiered/b2'), { headers: { 'x-priority': 'batch' } })];
    await until('two batch requests are in flight', async () => (await ups.tiered.stats()).open === 2);
    const shedBatch = await call(gw.url('/tiered/b3'), { headers: { 'x-priority': 'batch' } });
    assert.equal(shedBatch.status, 429, 'batch may use half the slots (reserveRatio 0.5): the third is shed');
    assert.equal(JSON.parse(shedBatch.body).status, 429);
    const unknown = await call(gw.url('/tiered/b4'), { headers: { 'x-priority': 'whatever' } });
    assert.equal(unknown.status, 429, 'an unknown tier name is the default tier (batch)');
    const critical = [
      call(gw.url('/tiered/c1'), { headers: { 'x-priority': 'critical' } }),
      call(gw.url('/tiered/c2'), { headers: { 'x-priority': 'critical' } }),
    ];
    await until('the critical requests are in flight', async () => (await ups.tiered.stats()).open === 4);
    const full = await call(gw.url('/tiered/c3'), { headers: { 'x-priority': 'critical' } });
    assert.equal(full.status, 429, 'past the whole limit even critical requests are shed');
    const health = call(gw.url('/health'));
    await until(
      'the routeTier critical request is in flight',
      async () => (await ups.tiered.stats()).byPath['/health'] === 1,
    );
    const text = await scrape();
    assert.equal(
      metricValue(text, 'floodgate_concurrency_shed_total', { scope: 'route:tiered', tier: 'batch', reason: 'limit' }),
      2,
    );
    assert.equal(
      metricValue(text, 'floodgate_concurrency_shed_total', {
        scope: 'route:tiered',
        tier: 'critical',
        reason: 'limit',
      }),
      1,
    );
    await ups.tiered.control({ hang: false });
    const answered = await Promise.all([...batch, ...critical, health]);
    assert.deepEqual(
      answered.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    const byPath = (await ups.tiered.stats()).byPath;
    assert.deepEqual(
      [byPath['/tiered/b3'], byPath['/tiered/b4'], byPath['/tiered/c3']],
      [undefined, undefined, undefined],
    );
  });

  it("shares an upstreams entry's limit between the routes forwarding to it", async () => {
    await ups.shared.control({ hang: true });
    const first = call(gw.url('/shared-a/1'));
    await until('the upstream holds the first', async () => (await ups.shared.stats()).open === 1);
    const other = await call(gw.url('/shared-b/1'));
    assert.equal(other.status, 503, 'the other route is shed by the shared limit of 1');
    assert.equal(
      metricValue(await scrape(), 'floodgate_concurrency_shed_total', { scope: 'upstream:shared', reason: 'limit' }),
      1,
    );
    await ups.shared.control({ hang: false });
    assert.equal((await first).status, 200);
    await until(
      'the shared slot is free',
      async () => (await gauge('floodgate_concurrency_in_flight', 'upstream:shared')) === 0,
    );
    assert.equal((await call(gw.url('/shared-b/2'))).status, 200);
  });

  it('opens the circuit against an upstream that errors, answers 503 without forwarding while open, then probes and closes when it recovers', async () => {
    await ups.fragile.control({ errorStatus: 500 });
    for (let i = 0; i < 3; i++) assert.equal((await call(gw.url(`/fragile/${i}`))).status, 500);
    assert.equal(await gauge('floodgate_circuit_state', 'route:fragile'), 2, 'open');
    const before = (await ups.fragile.stats()).received;
    const refused = await call(gw.url('/fragile/open'));
    assert.equal(refused.status, 503);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.deepEqual(JSON.parse(refused.body)['violated-policies'], ['circuit-breaker']);
    assert.equal((await ups.fragile.stats()).received, before, 'nothing was forwarded while open');
    await ups.fragile.control({ errorStatus: null });
    let probe: Reply | undefined;
    await until('a probe goes through', async () => {
      const r = await call(gw.url('/fragile/probe'));
      if (r.status === 200) probe = r;
      else assert.equal(r.status, 503);
      return probe !== undefined;
    });
    assert.equal((await ups.fragile.stats()).received, before + 1, 'only the probe reached the upstream');
    assert.equal(await gauge('floodgate_circuit_state', 'route:fragile'), 0, 'closed after the probe succeeded');
    assert.equal((await call(gw.url('/fragile/after'))).status, 200);
    const text = await scrape();
    for (const to of ['open', 'half-open', 'closed'])
      assert.equal(metricValue(text, 'floodgate_circuit_transitions_total', { scope: 'route:fragile', to }), 1, to);
    assert.ok(
      metricValue(text, 'floodgate_concurrency_shed_total', { scope: 'route:fragile', reason: 'circuit-open' }) >= 1,
    );
  });

  it('with an adaptive limit under load, the limit comes down from its start to what the upstream can serve, and the upstream never holds more than the ceiling', async () => {
    // 40 clients against an upstream of 4 slots of 10 ms: without a limit it would hold 40 at once.
    await ups.learned.control({ resetPeak: true });
    const samples: number[] = [];
    let running = true;
    const statuses = new Map<number, number>();
    const client = async (): Promise<void> => {
      while (running) {
        const r = await call(gw.url('/learned/x'));
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status !== 200) await new Promise((res) => setTimeout(res, 20));
      }
    };
    const clients = Array.from({ length: 40 }, client);
    for (let i = 0; i < 60; i++) {
      await new Promise((r) => setTimeout(r, 50));
      samples.push(await gauge('floodgate_concurrency_limit', 'route:learned'));
    }
    running = false;
    await Promise.all(clients);
    const settled = samples.slice(40);
    assert.ok(
      (statuses.get(200) ?? 0) > 0 && (statuses.get(503) ?? 0) > 0,
      `some requests were served and some shed: ${JSON.stringify([...statuses])}`,
    );
    assert.ok(
      settled.every((limit) => limit >= 2 && limit < 30),
      `the limit came down from 30 and stays within minLimit: ${JSON.stringify(samples)}`,
    );
    const peak = (await ups.learned.stats()).peakOpen;
    assert.ok(peak <= 30, `the upstream never held more than maxLimit (30) at once: ${peak}`);
    await until(
      'every slot is back',
      async () => (await gauge('floodgate_concurrency_in_flight', 'route:learned')) === 0,
    );
  });

  it('on reload keeps the limiters of unchanged sections, swaps a changed one, and a request admitted before gives its slot back to the old one', async () => {
    await ups.bulk.control({ hang: true });
    const before = (await ups.bulk.stats()).byPath['/bulk/old'] ?? 0;
    const old = call(gw.url('/bulk/old'));
    await until(
      'the upstream holds the request',
      async () => (await ups.bulk.stats()).byPath['/bulk/old'] === before + 1,
    );
    const from = gw.logs.length;
    await gw.writeConfig(
      configFor(origins, dead).replace(
        'concurrency: { limit: 2 }\n  - name: dead',
        'concurrency: { limit: 1 }\n  - name: dead',
      ),
    );
    const reloaded = await gw.waitForLog('config reloaded', from, 5_000);
    assert.equal(reloaded.newGuards, 1, "only the bulkhead route's limit changed");
    assert.ok(
      (reloaded.keptGuards as number) >= 6,
      `the other limiters and breakers were kept: ${JSON.stringify(reloaded)}`,
    );
    assert.equal(
      await gauge('floodgate_concurrency_in_flight', 'route:bulkhead'),
      0,
      "the new limiter holds nothing of the old one's",
    );
    assert.equal(await gauge('floodgate_concurrency_limit', 'route:bulkhead'), 1);
    const fresh = call(gw.url('/bulk/new'));
    await until(
      'the new limiter admits one',
      async () => (await gauge('floodgate_concurrency_in_flight', 'route:bulkhead')) === 1,
    );
    assert.equal((await call(gw.url('/bulk/third'))).status, 503, 'the new limit of 1 is full');
    await ups.bulk.control({ hang: false });
    assert.deepEqual([(await old).status, (await fresh).status], [200, 200]);
    await until(
      'the new limiter is empty again',
      async () => (await gauge('floodgate_concurrency_in_flight', 'route:bulkhead')) === 0,
    );
  });
});
