import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ManualClock,
  fixedWindow,
  gcra,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Decision,
} from '../../src/index.js';
import { sweepCount } from '../support/sweep.js';
import { seeded } from '../waiting/support.js';
import {
  BATCH_SCRIPT,
  OverLimitCache,
  RedisStore,
  ioredisAdapter,
  type RedisAdapter,
  type RedisStoreOptions,
} from '../../src/stores/redis/index.js';
import { useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const get = useRedis();

/** counting wraps the test client's adapter and records the SHA1 (or 'eval') of every call. */
function counting(): { adapter: RedisAdapter; calls: string[] } {
  const inner = ioredisAdapter(get().client);
  const calls: string[] = [];
  return {
    calls,
    adapter: {
      cluster: false,
      evalsha: (sha1, keys, args) => (calls.push(sha1), inner.evalsha(sha1, keys, args)),
      eval: (script, keys, args) => (calls.push('eval'), inner.eval(script, keys, args)),
    },
  };
}

function store(prefix: string, adapter: RedisAdapter, more: Partial<RedisStoreOptions> = {}): RedisStore {
  return new RedisStore({ timeoutMs: DECIDES, adapter, prefix: `${prefix}-${Date.now()}:`, ...more });
}

describe('the over-limit cache answers refusals it is sure of, without Redis', () => {
  const window = fixedWindow({ limit: 2, windowMs: 3_600_000 });

  test('a refused key is answered locally for that cost and larger ones, and peek too', async () => {
    const { adapter, calls } = counting();
    const t = store('cache1', adapter, { maxBatchSize: 1 }).bind(window);
    await t.consume('k', 1, 0);
    await t.consume('k', 1, 0);
    const refused = await t.consume('k', 1, 0);
    assert.equal(refused.allowed, false);
    const sent = calls.length;
    for (let i = 0; i < 100; i++) {
      const d = await t.consume('k', 1, 0);
      assert.equal(d.allowed, false);
      assert.equal(d.reason, 'limit');
      assert.ok(
        d.retryAfterMs >= refused.retryAfterMs - 1000 && d.retryAfterMs <= refused.retryAfterMs,
        String(d.retryAfterMs),
      );
    }
    assert.equal((await t.peek('k', 2, 0)).allowed, false);
    assert.equal(calls.length, sent, 'nothing sent for a cached refusal');
    assert.equal((await t.peek('k', 0, 0)).allowed, true, 'a smaller cost asks Redis');
    assert.equal(calls.length, sent + 1);
  });

  test('a refund or reset drops the entry, so the next request asks Redis', async () => {
    const { adapter } = counting();
    const t = store('cache2', adapter).bind(window);
    await t.consume('k', 2, 0);
    assert.equal((await t.consume('k', 1, 0)).allowed, false);
    await t.refund('k', 1, 0);
    assert.equal((await t.consume('k', 1, 0)).allowed, true);
    assert.equal((await t.consume('k', 1, 0)).allowed, false);
    await t.reset('k');
    assert.equal((await t.consume('k', 2, 0)).allowed, true);
  });

  test('the entry ends when Redis would admit again (a short bucket refill)', async () => {
    const { adapter } = counting();
    const t = store('cache3', adapter).bind(tokenBucket({ capacity: 1, refillPerSecond: 20 }));
    assert.equal((await t.consume('k', 1, 0)).allowed, true);
    const refused = await t.consume('k', 1, 0);
    assert.equal(refused.allowed, false);
    await new Promise((resolve) => setTimeout(resolve, refused.retryAfterMs + 5));
    assert.equal((await t.consume('k', 1, 0)).allowed, true);
  });

  test('it is off with unsafeTestTime and with overLimitCacheMaxKeys: 0', async () => {
    for (const more of [{ unsafeTestTime: true }, { overLimitCacheMaxKeys: 0 }]) {
      const { adapter, calls } = counting();
      const t = store('cache4', adapter, { ...more, maxBatchSize: 1 }).bind(window);
      for (let i = 0; i < 5; i++) await t.consume('k', 1, 0);
      assert.equal(calls.length, 5);
    }
  });

  test("on the store's clock: a refusal is answered locally until its retry time, then Redis is asked again", async () => {
    const clock = new ManualClock(5000);
    let calls = 0;
    const refuse = (): Promise<unknown> => (calls++, Promise.resolve(['0', '0', '100', '100']));
    const t = new RedisStore({
      adapter: { cluster: false, evalsha: refuse, eval: refuse },
      maxBatchSize: 1,
      clock,
      timers: clock,
    }).bind(window);
    assert.equal((await t.consume('k', 1, Number.NaN)).retryAfterMs, 100);
    clock.advance(60);
    const cached = await t.consume('k', 1, Number.NaN);
    assert.deepEqual(
      [cached.allowed, cached.retryAfterMs, calls],
      [false, 40, 1],
      'answered locally, counting down on the clock',
    );
    clock.advance(38);
    await t.consume('k', 1, Number.NaN);
    assert.equal(calls, 1, 'still certain at 98 ms');
    clock.advance(1);
    await t.consume('k', 1, Number.NaN);
    assert.equal(calls, 2, 'from 99 ms (retry rounded up) Redis is asked');
  });

  test('it is bounded: the oldest entry makes room', () => {
    let nowMs = 0;
    const cache = new OverLimitCache(3, { now: () => nowMs });
    const refusal: Decision = {
      allowed: false,
      limit: 1,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 1000,
      reason: 'limit',
    };
    for (const key of ['a', 'b', 'c', 'd']) cache.remember(key, 1, refusal, 0);
    assert.equal(cache.size, 3);
    assert.equal(cache.refusal('a', 1), undefined);
    assert.equal(cache.refusal('d', 1)?.retryAfterMs, 1000);
    nowMs = 998;
    assert.equal(cache.refusal('d', 1)?.retryAfterMs, 2);
    nowMs = 999; // sent at 0, retry 1000 ms rounded up: Redis may admit from 999 on
    assert.equal(cache.refusal('d', 1), undefined);
    cache.remember('e', 1, { ...refusal, allowed: true, reason: 'ok' }, nowMs);
    assert.equal(cache.refusal('e', 1), undefined, 'admissions are not cached');
  });
});

describe('decisions of one tick share one batch script', () => {
  test('200 decisions on one key: one script, exactly the limit admitted, in order', async () => {
    await get().client.script('LOAD', BATCH_SCRIPT.source);
    const { adapter, calls } = counting();
    const t = store('batch1', adapter).bind(fixedWindow({ limit: 50, windowMs: 3_600_000 }));
    const decisions = await Promise.all(Array.from({ length: 200 }, () => t.consume('k', 1, 0)));
    assert.deepEqual(
      decisions.map((d) => d.allowed),
      Array.from({ length: 200 }, (_, i) => i < 50),
    );
    assert.deepEqual(
      decisions.slice(0, 50).map((d) => d.remaining),
      Array.from({ length: 50 }, (_, i) => 49 - i),
    );
    assert.deepEqual(calls, [BATCH_SCRIPT.sha1, BATCH_SCRIPT.sha1], 'two batches of at most 128');
  });

  test('mixed policies, keys and ops in one batch answer as one by one', async () => {
    const policies = [
      gcra({ rate: 10, periodMs: 1000, maxBurst: 3 }),
      slidingWindowLog({ limit: 3, windowMs: 60_000 }),
      tokenBucket({ capacity: 2, refillPerSecond: 0.01 }),
    ];
    const ops = Array.from({ length: 60 }, (_, i) => ({
      policy: policies[i % 3]!,
      key: `k${i % 4}`,
      op: i % 5 === 0 ? ('peek' as const) : ('consume' as const),
      nowMs: 1_000_000 + i,
    }));
    const answer = async (s: RedisStore, together: boolean): Promise<Decision[]> => {
      const run = (o: (typeof ops)[number]): Promise<Decision> => s.bind(o.policy)[o.op](o.key, 1, o.nowMs);
      if (together) return Promise.all(ops.map(run));
      const out: Decision[] = [];
      for (const o of ops) out.push(await run(o));
      return out;
    };
    const batched = await answer(store('batch2a', counting().adapter, { unsafeTestTime: true }), true);
    const single = await answer(store('batch2b', counting().adapter, { unsafeTestTime: true, maxBatchSize: 1 }), false);
    assert.deepEqual(batched, single);
  });

  // Each key's state is read and written once a batch (held): a batch must leave Redis holding, key
  // for key, what the same decisions one by one leave, whatever the order of keys, times (the clock
  // going back too), costs, peeks and all-or-nothing groups. Seeds 1-40, FLOODGATE_SWEEP times more.
  const seeds = Array.from({ length: 40 * sweepCount() }, (_, i) => i + 1);
  test(`held states: a batch leaves every key as one by one does (seeds 1-${seeds.length})`, async () => {
    const policies = [
      tokenBucket({ capacity: 3, refillPerSecond: 2 }),
      fixedWindow({ limit: 4, windowMs: 1000 }),
      gcra({ rate: 5, periodMs: 1000, maxBurst: 2 }),
      slidingWindowLog({ limit: 3, windowMs: 500 }),
      slidingWindowCounter({ limit: 4, windowMs: 800 }),
    ];
    for (const seed of seeds) {
      const random = seeded(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
      type Step =
        | { kind: 'one'; op: 'consume' | 'peek'; policy: number; key: string; cost: number; nowMs: number }
        | { kind: 'all'; members: { policy: number; key: string; cost: number }[]; nowMs: number };
      const steps: Step[] = Array.from({ length: 30 }, () => {
        const nowMs = 10_000 + Math.floor(random() * 1500);
        if (random() < 0.2) {
          const members = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
            policy: Math.floor(random() * policies.length),
            key: pick(['a', 'b', 'c']),
            cost: pick([0, 1, 1, 2]),
          }));
          return { kind: 'all', members, nowMs };
        }
        const op = random() < 0.25 ? 'peek' : 'consume';
        return {
          kind: 'one',
          op,
          policy: Math.floor(random() * policies.length),
          key: pick(['a', 'b', 'c']),
          cost: pick([0, 1, 1, 2]),
          nowMs,
        };
      });
      const run = async (s: RedisStore, together: boolean): Promise<unknown[]> => {
        const one = (step: Step): Promise<unknown> =>
          step.kind === 'one'
            ? s.bind(policies[step.policy]!)[step.op](step.key, step.cost, step.nowMs)
            : s.consumeAll(
                step.members.map((m) => ({ policy: policies[m.policy]!, key: m.key, cost: m.cost })),
                step.nowMs,
              );
        if (together) return Promise.all(steps.map(one));
        const out: unknown[] = [];
        for (const step of steps) out.push(await one(step));
        return out;
      };
      // Each key's bytes and TTL, read just after its run: the TTLs of the two runs differ only by
      // the real time between their reads (a few ms), a TTL from another write by far more.
      const stored = async (prefix: string): Promise<Array<[string, string, number]>> => {
        const keys = (await get().client.keys(`${prefix}*`)).sort();
        return Promise.all(
          keys.map(async (key): Promise<[string, string, number]> => [
            key.slice(prefix.length),
            (
              await get()
                .client.getBuffer(key)
                .catch(() => null)
            )?.toString('hex') ?? 'not a string',
            await get().client.pttl(key),
          ]),
        );
      };
      const [held, one] = [`held-${Date.now()}-${seed}t:`, `held-${Date.now()}-${seed}a:`];
      const adapter = ioredisAdapter(get().client);
      const together = new RedisStore({ adapter, timeoutMs: DECIDES, prefix: held, unsafeTestTime: true });
      const alone = new RedisStore({ adapter, timeoutMs: DECIDES, prefix: one, unsafeTestTime: true, maxBatchSize: 1 });
      const batched = await run(together, true);
      const heldKeys = await stored(held);
      const single = await run(alone, false);
      const oneKeys = await stored(one);
      assert.deepEqual(batched, single, `seed ${seed}: answers`);
      assert.deepEqual(
        heldKeys.map(([key, bytes]) => [key, bytes]),
        oneKeys.map(([key, bytes]) => [key, bytes]),
        `seed ${seed}: what Redis holds`,
      );
      heldKeys.forEach(([key, , ttl], i) =>
        assert.ok(
          Math.abs(ttl - oneKeys[i]![2]) <= 50,
          `seed ${seed}: ${key} lives ${ttl} ms, one by one ${oneKeys[i]![2]} ms`,
        ),
      );
    }
  });

  test('the batch script names each policy and each key once; a bad policy or key number fails its decision only', async () => {
    await get().client.script('LOAD', BATCH_SCRIPT.source);
    const head = '1,4,fixed-window,2,60000,0,';
    const decisions = '1,1,consume,5000,1,7,2,consume,5000,1,1,2,peek,5000,2,1,9,consume,5000,1,';
    const reply = await get().client.evalsha(BATCH_SCRIPT.sha1, 2, 'bp:a', 'bp:b', head + decisions);
    assert.equal(typeof reply, 'string', 'one string for the whole batch');
    const fields = String(reply).split(',');
    assert.deepEqual(fields.slice(0, 4), ['1', '1', '0', '55000']);
    assert.equal(fields[4], 'E');
    assert.match(fields[5]!, /bad policy number 7/);
    assert.deepEqual(fields.slice(6, 8), ['', '']);
    assert.deepEqual(fields.slice(8, 12), ['1', '0', '0', '55000'], 'bp:b, the second key');
    assert.equal(fields[12], 'E');
    assert.match(fields[13]!, /bad key number 9/);
    assert.deepEqual(fields.slice(14), ['', '', ''], 'each field ends with the separator');
    const one = '1,1,fixed-window,2,60000,0,';
    for (const args of [
      [one + '1,1,consume,5000,'], // a decision short of a field
      [one + '1,1,consume,5000,1'], // the last field not ended
      [one, '1,1,consume,5000,1,'], // two arguments
      ['1,2,fixed-window,2,60000,0,1,1,consume,5000,1,'], // fewer decisions than it says
    ]) {
      await assert.rejects(get().client.evalsha(BATCH_SCRIPT.sha1, 1, 'bp:a', ...args), /batch arguments/);
    }
  });

  test('a key decided many times in one batch is read once and written once', async () => {
    const client = get().client;
    const t = store('batch-hot', counting().adapter).bind(tokenBucket({ capacity: 1000, refillPerSecond: 1 }));
    await t.consume('warm', 1, 0); // the script loaded, so the counts below are the batch's alone
    await client.config('RESETSTAT');
    const decisions = await Promise.all(Array.from({ length: 20 }, () => t.consume('hot', 1, 0)));
    assert.deepEqual(
      decisions.map((d) => d.remaining),
      Array.from({ length: 20 }, (_, i) => 999 - i),
    );
    const stats = await client.info('commandstats');
    const calls = (name: string): number => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    assert.deepEqual([calls('evalsha'), calls('get'), calls('set')], [1, 1, 1]);
  });

  test('a corrupt state fails its own decision only', async () => {
    const s = store('batch3', counting().adapter, { onError: 'throw' });
    const t = s.bind(tokenBucket({ capacity: 3, refillPerSecond: 1 }));
    await get().client.set(t.entryOf('bad').redisKey, 'not doubles');
    const results = await Promise.allSettled([
      t.consume('good', 1, 0),
      t.consume('bad', 1, 0),
      t.consume('good', 1, 0),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /holds 11 bytes/);
  });

  test('a key holding the separator and the escape is decided in a batch, and named whole in its error', async () => {
    const s = store('batch4', counting().adapter, { onError: 'throw' });
    const t = s.bind(tokenBucket({ capacity: 3, refillPerSecond: 1 }));
    const odd = 'a,b%2C,%25;c';
    await get().client.set(t.entryOf(`bad${odd}`).redisKey, 'not doubles');
    const results = await Promise.allSettled([
      t.consume(odd, 1, 0),
      t.consume(`bad${odd}`, 1, 0),
      t.consume(odd, 2, 0),
    ]);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value.remaining : 'rejected')),
      [2, 'rejected', 0],
    );
    const reason = String((results[1] as PromiseRejectedResult).reason);
    assert.ok(reason.includes(`state of ${t.entryOf(`bad${odd}`).redisKey} holds 11 bytes`), reason);
  });
});
