import fc from 'fast-check';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { describe, test } from 'node:test';
import {
  Limiter,
  ManualClock,
  askLease,
  fixedWindow,
  gcra,
  leaseSettingsOf,
  leaseTermsOf,
  returnLease,
  tokenBucket,
  type Algorithm,
  type Decision,
  type LeaseHolder,
} from '../../src/index.js';
import { LeasedStore, RedisLeaseSource, RedisStore, ioredisAdapter } from '../../src/redis.js';
import { beforeStop, useRedis } from '../redis/setup.js';
import { runs } from '../support/sweep.js';

const get = useRedis();

// Redis answers every call in these tests, however loaded the machine.
const DECIDES = 5000;

describe('the lease script against the pure ledger (unsafeTestTime, random asks)', () => {
  const stepArb = fc.record({
    holder: fc.integer({ min: 0, max: 2 }),
    advanceMs: fc.integer({ min: 0, max: 300 }),
    demand: fc.integer({ min: 0, max: 3e6 }),
    held: fc.integer({ min: 0, max: 30 }),
    wanted: fc.integer({ min: 0, max: 200 }),
    spend: fc.constantFrom(0, 0, 1, 3),
    giveBack: fc.constantFrom(false, false, false, true),
  });
  for (const [name, policy] of [
    ['token bucket', tokenBucket({ capacity: 300, refillPerSecond: 200 })],
    ['fixed window', fixedWindow({ limit: 300, windowMs: 500 })],
    ['gcra', gcra({ rate: 300, periodMs: 1000, maxBurst: 99 })],
  ] as const) {
    test(`${name}: identical answers, step for step`, async () => {
      const { client } = get();
      const clock = new ManualClock(5_000_000);
      const store = new RedisStore({
        adapter: ioredisAdapter(client),
        unsafeTestTime: true,
        clock,
        timeoutMs: DECIDES,
        prefix: `diff:${name}:`,
      });
      const terms = leaseTermsOf(policy, leaseSettingsOf({ maxOutstandingShare: 0.1, leaseMs: 600 }, 'lease'));
      const source = new RedisLeaseSource(store.shares(), policy, terms);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
          const key = `k${run++}`;
          const model = new Model(policy);
          let expiresAtMs = 0;
          for (const s of steps) {
            clock.advance(s.advanceMs);
            const holder = `h${s.holder}`;
            if (s.giveBack) {
              const back = { holder, units: s.held, expiresAtMs, held: 0, leaving: s.holder === 0 };
              assert.equal(await source.giveBack(key, back), model.giveBack(back, clock.now()));
              continue;
            }
            const ask = { holder, demand: s.demand, held: s.held, wanted: s.wanted, spend: s.spend };
            const expected = model.ask(ask, clock.now(), terms);
            assert.deepEqual(await source.ask(key, ask), expected);
            expiresAtMs = expected.expiresAtMs;
          }
        }),
        { numRuns: runs(40) },
      );
    });
  }
});

/** The pure ledger on one key, with the store's rule for a state at rest (it reads as fresh). */
class Model {
  private cells: Float64Array | undefined;
  private readonly holders = new Map<string, LeaseHolder>();
  constructor(private readonly policy: Algorithm) {}
  private load(nowMs: number): Float64Array {
    if (this.cells !== undefined && this.policy.restAtMs(this.cells, 0) <= nowMs) this.cells = undefined;
    if (this.cells === undefined) {
      this.cells = new Float64Array(this.policy.width);
      this.policy.init(this.cells, 0, nowMs);
    }
    return this.cells;
  }
  ask(ask: Parameters<typeof askLease>[4], nowMs: number, terms: Parameters<typeof askLease>[6]) {
    return askLease(this.policy, this.load(nowMs), 0, this.holders, ask, nowMs, terms);
  }
  giveBack(back: Parameters<typeof returnLease>[4], nowMs: number): number {
    const fresh = this.cells === undefined || this.policy.restAtMs(this.cells, 0) <= nowMs;
    const cells = this.load(nowMs);
    if (fresh) return returnLease(this.policy, new Float64Array(cells), 0, this.holders, back, nowMs);
    return returnLease(this.policy, cells, 0, this.holders, back, nowMs);
  }
}

/** Three processes' worth of leasing stores on the test's Redis, each with its own connection. */
function nodes(count: number, prefix: string, options: { maxOutstandingShare?: number; leaseMs?: number } = {}) {
  const { servers } = get();
  return Array.from({ length: count }, () => {
    const client = new Redis({ port: servers.ports[0]!, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    beforeStop(() => client.disconnect());
    const redis = new RedisStore({ adapter: ioredisAdapter(client), prefix, timeoutMs: DECIDES });
    return { client, redis, store: new LeasedStore({ store: redis, ...options }) };
  });
}

async function commandCalls(client: Redis, command: 'evalsha' | 'eval'): Promise<number> {
  const info = await client.info('commandstats');
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return match === null ? 0 : Number(match[1]);
}

describe('leases on a real Redis', () => {
  test('3 nodes on one key: no unit admitted twice, none lost, and most requests make no round trip', async () => {
    const { client } = get();
    const policy = tokenBucket({ capacity: 3000, refillPerSecond: 1e-6 });
    const fleet = nodes(3, 'exact:', { maxOutstandingShare: 0.03 });
    const limiters = fleet.map(({ store }) => new Limiter({ policy, store }));
    // Every node connected first: an ask sent before its connection is up fails, and the node then
    // decides per request for a while, which is the failure path, not the steady state counted here.
    await Promise.all(fleet.map(({ client: c }) => c.ping()));
    const before = await commandCalls(client, 'evalsha');
    let admitted = 0;
    let decided = 0;
    // 4,000 requests against a bucket of 3,000 that does not refill within the test.
    await Promise.all(
      limiters.map(async (limiter) => {
        for (let i = 0; i < 1334; i++) {
          const d = await limiter.consume('shared');
          decided++;
          if (d.allowed) admitted++;
        }
      }),
    );
    const calls = (await commandCalls(client, 'evalsha')) - before;
    await Promise.all(fleet.map(({ store }) => store.close()));
    const direct = new RedisStore({ adapter: ioredisAdapter(client), prefix: 'exact:' }).bind(policy);
    const left = (await direct.peek('shared', 0, Number.NaN)).remaining;
    assert.equal(decided, 4002);
    assert.ok(admitted <= 3000, `${admitted} admitted of a bucket of 3000`);
    assert.equal(
      admitted + left,
      3000,
      `admitted ${admitted} + left ${left}: every unit leased was spent or given back`,
    );
    assert.ok(calls / admitted <= 0.2, `${calls} scripts for ${admitted} admitted`);
  });

  test('leasing and per-request processes share one limit', async () => {
    const policy = fixedWindow({ limit: 500, windowMs: 3_600_000 });
    const [leasing] = nodes(1, 'mixed:');
    const perRequest = new Limiter({ policy, store: leasing!.redis });
    const leased = new Limiter({ policy, store: leasing!.store });
    let admitted = 0;
    for (let i = 0; i < 400; i++) {
      if ((await leased.consume('k')).allowed) admitted++;
      if ((await perRequest.consume('k')).allowed) admitted++;
    }
    await leasing!.store.close();
    const left = (await leasing!.redis.bind(policy).peek('k', 0, Number.NaN)).remaining;
    assert.ok(admitted <= 500, `${admitted} admitted of 500`);
    assert.equal(admitted + left, 500, `admitted ${admitted} + left ${left}`);
  });

  test('a policy leases cannot run is refused when bound, with a typed error', () => {
    const [node] = nodes(1, 'refuse:');
    assert.throws(
      () =>
        new Limiter({
          policy: { ...tokenBucket({ capacity: 5, refillPerSecond: 1 }), kind: undefined },
          store: node!.store,
        }),
      { code: 'INVALID_OPTION' },
    );
  });

  test('Redis killed, restarted, hung and resumed under a leasing node: every request answered, leases resume', async (t) => {
    const { servers } = get();
    const client = new Redis({
      port: servers.ports[0]!,
      host: '127.0.0.1',
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      retryStrategy: () => 50,
    });
    client.on('error', () => undefined);
    beforeStop(() => client.disconnect());
    await new Promise((resolve) => client.once('ready', resolve));
    const redis = new RedisStore({
      adapter: ioredisAdapter(client),
      prefix: 'faults:',
      timeoutMs: 200,
      probeIntervalMs: 50,
    });
    const store = new LeasedStore({ store: redis, leaseMs: 2000 });
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 100_000, refillPerSecond: 50_000 }), store });
    const reasons = new Map<string, number>();
    let slowest = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) {
        const startedMs = performance.now();
        const d: Decision = await limiter.consume('k');
        slowest = Math.max(slowest, performance.now() - startedMs);
        reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
        await sleep(1);
      }
    })();
    const phase = async (name: string, ms: number): Promise<Map<string, number>> => {
      reasons.clear();
      await sleep(ms);
      t.diagnostic(`${name}: ${JSON.stringify(Object.fromEntries(reasons))}`);
      return new Map(reasons);
    };
    await phase('healthy', 400);
    await servers.kill(0);
    const down = await phase('killed', 2500);
    await servers.restart(0);
    await phase('restarting', 1000);
    const back = await phase('back', 600);
    servers.signal(0, 'SIGSTOP');
    const hung = await phase('hung', 2500);
    servers.signal(0, 'SIGCONT');
    await phase('resuming', 1000);
    const resumed = await phase('resumed', 600);
    stop = true;
    await load;
    await store.close();
    assert.ok((down.get('fallback') ?? 0) > 0, 'the store failure policy decided once the units held ran out');
    assert.ok((hung.get('fallback') ?? 0) > 0);
    assert.ok((back.get('ok') ?? 0) > 0 && (back.get('fallback') ?? 0) === 0, 'leases again after the restart');
    assert.ok((resumed.get('ok') ?? 0) > 0 && (resumed.get('fallback') ?? 0) === 0, 'leases again after the hang');
    t.diagnostic(`slowest decision ${Math.round(slowest)} ms (timeoutMs 200)`);
  });
});
