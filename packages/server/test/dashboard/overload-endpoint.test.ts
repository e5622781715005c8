/**
 * The Overload protection section of a real gateway's dashboard: a `floodgate serve` process with
 * a concurrency limit, an adaptive limit with a circuit breaker and a shared upstream limit, in
 * front of slot-service upstream processes, read over HTTP as the page, the JSON and the stream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { DashboardView } from '../../src/dashboard/view.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startSlotUpstream, type SlotUpstream } from '../support/slot-upstream.js';

const TOKEN = 'dashboard-overload-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

function configFor(up: Record<'bulk' | 'learned' | 'shared', string>, withBulk = true): string {
  return `
admin: { tokenEnv: FG_DASHBOARD_TOKEN }
limits: { upstreamTimeoutMs: 2000, connectTimeoutMs: 1000, headersTimeoutMs: 2000, requestTimeoutMs: 20000 }
routes:
  - name: bulk
    match: { path: /bulk/* }
    upstream: ${up.bulk}
${withBulk ? '    concurrency: { limit: 1 }\n' : ''}  - name: learned
    match: { path: /learned/* }
    upstream: ${up.learned}
    adaptive: { initialLimit: 10, minLimit: 2, maxLimit: 10, windowMs: 100 }
    circuitBreaker: { trigger: { type: errorCount, count: 3 }, minCalls: 3, openMs: 60000 }
  - name: shared
    match: { path: /shared/* }
    upstream: ${up.shared}
upstreams:
  - url: ${up.shared}
    name: shared
    concurrency: { limit: 1 }
`;
}

/** Polls `check` every 50 ms until it holds; fails naming `what` when it has not after 15 s (a bound, not a measurement). */
async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`never: ${what}`);
}

describe("the dashboard's overload protection, on a gateway process with guards", () => {
  const ups = {} as Record<'bulk' | 'learned' | 'shared', SlotUpstream>;
  let origins: Record<keyof typeof ups, string>;
  let gw: GatewayProcess;
  const view = async (): Promise<DashboardView> =>
    JSON.parse((await call(gw.adminUrl('/dashboard/snapshot.json'), { headers: AUTH })).body) as DashboardView;
  const scope = async (name: string) => (await view()).overload.scopes.find((s) => s.scope === name);

  before(async () => {
    [ups.bulk, ups.learned, ups.shared] = await Promise.all([
      startSlotUpstream({ slots: 4, serviceMs: 5 }),
      startSlotUpstream({ slots: 4, serviceMs: 5 }),
      startSlotUpstream({ slots: 4, serviceMs: 5 }),
    ]);
    origins = { bulk: ups.bulk.origin, learned: ups.learned.origin, shared: ups.shared.origin };
    gw = await startGateway(configFor(origins), { env: { FG_DASHBOARD_TOKEN: TOKEN } });
    await gw.waitForLog('ready');
  });
  after(async () => {
    assert.equal(await gw?.stop(), 0, 'the gateway exits cleanly: the sampler holds nothing open');
    await Promise.all(Object.values(ups).map((u) => u.stop()));
  });

  it('lists every guard of the config, route and upstream, with its figures and samples a second apart', async () => {
    // One sample when the dashboard is mounted, then one at each whole second.
    await until('three samples', async () => ((await scope('route:bulk'))?.samples.length ?? 0) >= 3);
    const v = await view();
    assert.deepEqual(
      v.overload.scopes.map((s) => s.scope),
      ['route:bulk', 'route:learned', 'upstream:shared'],
    );
    const learned = v.overload.scopes[1]!;
    assert.equal(learned.now?.limit, 10);
    assert.ok(learned.now?.adaptive !== undefined, 'an adaptive limit');
    assert.equal(learned.circuit?.state, 'closed');
    const [a, b] = v.overload.scopes[0]!.samples.slice(-2);
    assert.ok(b!.atMs - a!.atMs >= 900 && b!.atMs - a!.atMs <= 2_500, `about a second apart: ${b!.atMs - a!.atMs} ms`);
  });

  it('shows a shed request of a full concurrency limit, by reason, and the slot it held', async () => {
    await ups.bulk.control({ hang: true });
    const held = call(gw.url('/bulk/held'));
    await until('the upstream holds one', async () => (await ups.bulk.stats()).open === 1);
    assert.equal((await call(gw.url('/bulk/shed'))).status, 503);
    await until('the board saw the shed and the slot in use', async () => {
      const bulk = await scope('route:bulk');
      return bulk?.shedInWindow.limit === 1 && bulk.samples.some((s) => s.inFlight === 1 && s.limit === 1);
    });
    const page = await call(gw.adminUrl('/dashboard'), { headers: AUTH });
    assert.match(page.body, /<section id="overload"><h2>Overload protection<\/h2>/);
    const card = page.body.slice(page.body.indexOf('data-scope="route:bulk"'));
    assert.match(card, /limit <b class="limit">1<\/b> · in flight <b class="in-flight">1<\/b>/);
    assert.match(
      card,
      /<tr data-reason="limit"><td>limit<\/td><td class="num shed-rate">[\d.]+<\/td><td class="num shed-window">1<\/td><\/tr>/,
    );
    assert.match(card, /<path class="line-in-flight" d="M/);
    await ups.bulk.control({ hang: false });
    assert.equal((await held).status, 200);
  });

  it('shows the circuit opening, with the change and how long until it retries', async () => {
    await ups.learned.control({ errorStatus: 500 });
    for (let i = 0; i < 3; i++) assert.equal((await call(gw.url(`/learned/${i}`))).status, 500);
    assert.equal((await call(gw.url('/learned/refused'))).status, 503);
    const learned = (await scope('route:learned'))!;
    assert.equal(learned.circuit?.state, 'open');
    assert.ok(
      learned.circuit.retryInMs > 50_000 && learned.circuit.retryInMs <= 60_000,
      `retry in ${learned.circuit.retryInMs} ms`,
    );
    assert.deepEqual(
      learned.circuit.transitions.map((t) => [t.from, t.to, t.reason]),
      [['closed', 'open', 'errorCount']],
    );
    const page = (await call(gw.adminUrl('/dashboard'), { headers: AUTH })).body;
    const card = page.slice(page.indexOf('data-scope="route:learned"'));
    assert.match(
      card,
      /circuit <span class="circuit-state state-open">open<\/span> · retry in <b class="retry-in">[\d,]+<\/b> ms/,
    );
    assert.match(card, /<td>closed → open<\/td><td>errorCount<\/td>/);
    assert.match(card, /<svg class="chart latency"/);
    await until(
      'the circuit-open shed is counted',
      async () => (await scope('route:learned'))?.shedInWindow['circuit-open'] === 1,
    );
    await ups.learned.control({ errorStatus: null });
  });

  it('sends the section in every live update', async () => {
    const res = await request(gw.adminUrl('/dashboard/events'), { headers: AUTH });
    let text = '';
    for await (const chunk of res.body) {
      text += (chunk as Buffer).toString();
      if (text.includes('\n\n', text.indexOf('data: '))) break;
    }
    res.body.destroy();
    const update = JSON.parse(/^data: (.*)$/m.exec(text)![1]!) as { live: string };
    assert.match(update.live, /<section id="overload">[\s\S]*data-scope="upstream:shared"/);
  });

  it('follows a reload: a guard the config no longer has leaves the dashboard', async () => {
    const from = gw.logs.length;
    await gw.writeConfig(configFor(origins, false));
    await gw.waitForLog('config reloaded', from, 5_000);
    await until('route:bulk is gone', async () =>
      (await view()).overload.scopes.every((s) => s.scope !== 'route:bulk'),
    );
    const learned = (await scope('route:learned'))!;
    assert.equal(learned.circuit?.state, 'open', 'an unchanged breaker is kept, and so is what the board knows of it');
    assert.equal(learned.circuit.transitions.length, 1);
  });
});
