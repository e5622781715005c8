import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRedisServer, type RedisServers } from '../../floodgate/test/support/redis-server.js';
import { startGateway, type GatewayProcess } from './support/gateway-process.js';
import { call, type Reply } from './support/http.js';
import { startUpstream, type TestUpstream } from './support/upstream.js';

// Issue 20 through the gateway: two `floodgate serve` processes with `store: { type: redis, url }`
// and nothing else (the gateway's defaults), under a steady load while their Redis hangs (SIGSTOP)
// and is killed and restarted. Every request is answered, none with a 5xx, and once Redis is back
// both gateways decide on it again: a tight limit shared by the two holds exactly. Behaviour only.
const FAULT_MS = 1200;

function config(redisPort: number, upstream: string): string {
  return `
store: { type: redis, url: "redis://127.0.0.1:${redisPort}" }
routes:
  - name: steady
    match: { path: /steady }
    upstream: ${upstream}
    rules:
      - name: roomy
        policy: { algorithm: tokenBucket, capacity: 1000000, refillPerSecond: 1000000 }
        key: { type: route }
  - name: tight
    match: { path: /tight }
    upstream: ${upstream}
    rules:
      - name: per-tenant
        policy: { algorithm: tokenBucket, capacity: 5, refillPerSecond: 0.000001 }
        key: { type: header, name: x-tenant }
`;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SteadyLoad sends two requests every 10 ms, one to each gateway, whatever happens to them, and keeps every outcome. */
class SteadyLoad {
  readonly replies: Reply[] = [];
  readonly failures: unknown[] = [];
  private readonly pending = new Set<Promise<void>>();
  private readonly timer: NodeJS.Timeout;

  constructor(gateways: readonly GatewayProcess[]) {
    this.timer = setInterval(() => {
      for (const g of gateways) {
        const done = call(g.url('/steady')).then(
          (r) => void this.replies.push(r),
          (e: unknown) => void this.failures.push(e),
        );
        this.pending.add(done);
        void done.then(() => this.pending.delete(done));
      }
    }, 10);
  }

  /** stop stops sending and resolves once every request has been answered or failed. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.pending]);
  }
}

/** Polls `gateway` until a reply is decided by Redis (no `floodgate-degraded` header); fails the test after `withinMs`. */
async function decidedByRedis(gateway: GatewayProcess, withinMs = 20_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    const r = await call(gateway.url('/steady'));
    if (r.status === 200 && r.headers['floodgate-degraded'] === undefined) return;
    await sleep(20);
  }
  assert.fail(`${gateway.url('/steady')} was not decided by Redis again within ${withinMs} ms`);
}

let tenants = 0;

/**
 * Sends 8 requests of a new tenant, alternating between the gateways, until all 8 were decided by
 * Redis (a decision made locally, say while a probe is still out, starts over with a new tenant),
 * and returns how many were admitted: exactly the shared limit, 5, when Redis decides.
 */
async function sharedLimitAdmits(gateways: readonly GatewayProcess[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const tenant = `tenant-${process.pid}-${tenants++}`;
    const replies: Reply[] = [];
    for (let i = 0; i < 8; i++)
      replies.push(await call(gateways[i % 2]!.url('/tight'), { headers: { 'x-tenant': tenant } }));
    if (replies.every((r) => r.headers['floodgate-degraded'] === undefined))
      return replies.filter((r) => r.status === 200).length;
    await sleep(50);
  }
  assert.fail('no tenant had all its requests decided by Redis');
}

describe('floodgate serve at its Redis defaults, through Redis faults', () => {
  let redis: RedisServers;
  let upstream: TestUpstream;
  let gateways: GatewayProcess[];
  let load: SteadyLoad;

  before(async () => {
    redis = await startRedisServer();
    upstream = await startUpstream();
    const yaml = config(redis.ports[0]!, upstream.origin);
    gateways = await Promise.all([startGateway(yaml), startGateway(yaml)]);
    await Promise.all(gateways.map((g) => g.waitForLog('ready')));
    await Promise.all(gateways.map((g) => decidedByRedis(g)));
    load = new SteadyLoad(gateways);
  });
  after(async () => {
    await load?.stop();
    await Promise.all((gateways ?? []).map((g) => g.stop()));
    await upstream?.close();
    await redis?.stop();
  });

  it('hung (SIGSTOP), then resumed: both gateways decide on Redis again, and the shared limit holds exactly', async () => {
    redis.signal(0, 'SIGSTOP');
    await sleep(FAULT_MS);
    redis.signal(0, 'SIGCONT');
    await Promise.all(gateways.map((g) => decidedByRedis(g)));
    assert.equal(await sharedLimitAdmits(gateways), 5);
  });

  it('killed, then restarted: both gateways decide on Redis again, and the shared limit holds exactly', async () => {
    await redis.kill(0);
    await sleep(FAULT_MS);
    await redis.restart(0);
    await Promise.all(gateways.map((g) => decidedByRedis(g)));
    assert.equal(await sharedLimitAdmits(gateways), 5);
  });

  it('through it all: every request was answered, none with a 5xx, and both gateways are still up', async () => {
    await load.stop();
    assert.deepEqual(load.failures, [], 'every request was answered');
    const statuses = new Map<number, number>();
    for (const r of load.replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    assert.deepEqual([...statuses.keys()], [200], `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.ok(
      load.replies.some((r) => r.headers['floodgate-degraded'] !== undefined),
      'the faults were seen',
    );
    assert.ok(load.replies.length > 300, `the load ran (${load.replies.length} requests)`);
    for (const g of gateways) assert.equal(g.child.exitCode, null, 'the gateway is still running');
  });
});
