/**
 * Gateway processes sharing a store each list all of them on their dashboards: FleetBoard's rounds on
 * a manual clock against an in-memory registry, then two real gateway processes on one real Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { startRedisServer, type RedisServers } from '../../../floodgate/test/support/redis-server.js';
import { FleetBoard, type ProcessRegistry, type ProcessSummary } from '../../src/dashboard/fleet.js';
import type { DashboardView } from '../../src/dashboard/view.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { call } from '../support/http.js';
import { startUpstream, type TestUpstream } from '../support/upstream.js';

/** A registry in a Map, as Redis's hash would hold it; `hang` makes every call wait forever. */
function mapRegistry(): ProcessRegistry & { map: Map<string, string>; hang: boolean } {
  const map = new Map<string, string>();
  const reg = {
    map,
    hang: false,
    wait: (): Promise<void> => (reg.hang ? new Promise<void>(() => {}) : Promise.resolve()),
    async publish(id: string, entry: string) {
      await reg.wait();
      map.set(id, entry);
    },
    async entries() {
      await reg.wait();
      return Object.fromEntries(map);
    },
    async remove(ids: readonly string[]) {
      await reg.wait();
      for (const id of ids) map.delete(id);
    },
  };
  return reg;
}

function summary(clock: ManualClock, pid: number, admitted: number): () => ProcessSummary {
  return () => ({
    host: 'gw',
    pid,
    port: 8000 + pid,
    adminPort: 9000 + pid,
    startedAtMs: pid,
    atMs: clock.now(),
    ready: true,
    rules: [{ route: 'api', rule: 'r', admitted, limited: 0, wouldRefuse: 0, degraded: 0, queued: 0 }],
  });
}

/** Lets the rounds' promises settle (the registry answers at once). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Moves the clock `ms` on, a second at a time, letting each round finish (and arm the next). */
async function pass(clock: ManualClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 1_000) {
    clock.advance(1_000);
    await settle();
  }
}

describe('FleetBoard', () => {
  it('publishes this process and lists every other one heard from in the last 10 s, forgetting the silent after 60 s', async () => {
    const clock = new ManualClock(1_000_000);
    const registry = mapRegistry();
    const a = new FleetBoard({ clock, registry, summary: summary(clock, 1, 5) });
    const b = new FleetBoard({ clock, registry, summary: summary(clock, 2, 7) });
    a.start();
    b.start();
    await settle();
    clock.advance(1_000);
    await settle();
    assert.deepEqual(
      a.view(clock.now()).processes.map((p) => [p.pid, p.self, p.rules[0]!.admitted]),
      [
        [1, true, 5],
        [2, false, 7],
      ],
    );
    b.stop();
    await pass(clock, 11_000);
    assert.deepEqual(
      a.view(clock.now()).processes.map((p) => p.pid),
      [1],
      'silent for 10 s: no longer listed',
    );
    assert.equal(registry.map.size, 2, 'still in the registry');
    await pass(clock, 50_000);
    assert.equal(registry.map.size, 1, 'silent for 60 s: removed');
    registry.map.set('garbage', 'not json');
    await pass(clock, 1_000);
    assert.equal(registry.map.has('garbage'), false, 'an entry that is not a summary is removed');
    a.stop();
  });

  it('keeps its rounds going through a store that does not answer, saying so', async () => {
    const clock = new ManualClock(1_000_000);
    const registry = mapRegistry();
    const a = new FleetBoard({ clock, registry, summary: summary(clock, 1, 5) });
    registry.hang = true;
    a.start();
    clock.advance(1_000);
    await settle();
    assert.match(a.view(clock.now()).error ?? '', /no answer within 1000 ms/);
    assert.equal(a.view(clock.now()).processes[0]!.self, true);
    registry.hang = false;
    clock.advance(1_000);
    await settle();
    await settle();
    assert.equal(a.view(clock.now()).error, undefined, 'the next round answered');
    a.stop();
  });
});

const TOKEN = 'dashboard-fleet-token-0123456789';

function config(redisPort: number, upstream: string): string {
  return `
admin: { tokenEnv: FG_FLEET_TOKEN }
store: { type: redis, url: "redis://127.0.0.1:${redisPort}", prefix: "fg-fleet-${process.pid}:" }
routes:
  - name: api
    upstream: ${upstream}
    rules:
      - name: per-client
        policy: { algorithm: fixedWindow, limit: 1000, windowMs: 600000 }
        key: { type: header, name: x-client }
`;
}

async function view(gw: GatewayProcess): Promise<DashboardView> {
  const reply = await call(gw.adminUrl('/dashboard/snapshot.json'), { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(reply.status, 200, reply.body);
  return JSON.parse(reply.body) as DashboardView;
}

describe('two gateway processes on one Redis', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let gateways: GatewayProcess[] = [];

  before(async () => {
    [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
    gateways = await Promise.all(
      [0, 1].map(() => startGateway(config(redis.ports[0]!, upstream.origin), { env: { FG_FLEET_TOKEN: TOKEN } })),
    );
    await Promise.all(gateways.map((g) => g.waitForLog('ready')));
  });
  after(async () => {
    for (const g of gateways) await g.stop();
    await upstream?.close();
    await redis?.stop();
  });

  it("each dashboard lists both processes, with the other's own figures", async () => {
    const [a, b] = gateways as [GatewayProcess, GatewayProcess];
    for (let i = 0; i < 6; i++) await call(b.url(`/x/${i}`), { headers: { 'x-client': 'c' } });
    // Within a few rounds (one a second), A reads B's entry with B's requests in its last 10 s.
    let found: DashboardView['fleet'];
    for (let i = 0; i < 40 && found === undefined; i++) {
      const fleet = (await view(a)).fleet;
      const other = fleet?.processes.find((p) => !p.self);
      if (other !== undefined && other.rules[0]!.admitted > 0) found = fleet;
      else await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(found !== undefined, 'A lists B with its admitted requests');
    assert.equal(found.processes.length, 2);
    const other = found.processes.find((p) => !p.self)!;
    assert.equal(other.pid, b.child.pid);
    assert.equal(other.adminPort, b.adminPort);
    assert.equal(found.processes.find((p) => p.self)!.pid, a.child.pid);
    const page = await call(a.adminUrl('/dashboard'), { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.match(page.body, /<h2>Gateway processes on this store \(2\)<\/h2>/);
    assert.match(page.body, new RegExp(`<tr data-pid="${b.child.pid}"`));
    // B reads the store on its own round (one a second): it lists A within a few rounds, as A listed B.
    const both = [a.child.pid, b.child.pid].sort();
    let fromB: number[] = [];
    for (let i = 0; i < 40 && fromB.length < 2; i++) {
      fromB = ((await view(b)).fleet?.processes ?? []).map((p) => p.pid).sort();
      if (fromB.length < 2) await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(fromB, both);
  });
});
