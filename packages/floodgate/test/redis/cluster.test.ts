import assert from 'node:assert/strict';
import { createClient, createCluster } from 'redis';
import { describe, test } from 'node:test';
import { FloodgateError, fixedWindow, gcra, tokenBucket } from '../../src/index.js';
import {
  BATCH_SCRIPT,
  CONSUME_ALL_SCRIPT,
  RedisStore,
  hashSlotOf,
  ioredisAdapter,
  nodeRedisAdapter,
  type RedisAdapter,
} from '../../src/stores/redis/index.js';
import { runConformance } from '../conformance/suite.js';
import { beforeStop, useRedisCluster } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// A six-node Redis Cluster (three masters, one replica each): the tables, and consumeAll within a
// slot (atomic) and across slots (two-phase with refund).
const get = useRedisCluster();

runConformance('redis store on a cluster (ioredis)', (algorithm) =>
  new RedisStore({
    timeoutMs: DECIDES,
    adapter: ioredisAdapter(get().client),
    prefix: 'conf:',
    unsafeTestTime: true,
  }).bind(algorithm),
);

/**
 * chargeCounting wraps `inner`, counting the all-or-nothing charges it sends by EVALSHA (a batch
 * script holding a group, `allN`, or a consume-all script; an EVAL after NOSCRIPT is the same
 * charge); when given, `beforeCharge` runs before each charge
 * is sent (and is waited for), to stage a racing request.
 */
function chargeCounting(
  inner: RedisAdapter,
  beforeCharge?: () => Promise<unknown>,
): { adapter: RedisAdapter; charges: () => number } {
  let charges = 0;
  const isCharge = (sha1: string, args: readonly string[]): boolean =>
    sha1 === CONSUME_ALL_SCRIPT.sha1 || (sha1 === BATCH_SCRIPT.sha1 && args.some((a) => /(^|,)all\d+,/.test(a)));
  const evalsha: RedisAdapter['evalsha'] = async (sha1, keys, args) => {
    if (isCharge(sha1, args)) {
      charges++;
      await beforeCharge?.();
    }
    return inner.evalsha(sha1, keys, args);
  };
  return { adapter: { ...inner, evalsha }, charges: () => charges };
}

describe('consumeAll on a cluster', () => {
  const perSecond = gcra({ rate: 10, periodMs: 1000, maxBurst: 2 });
  const perMinute = fixedWindow({ limit: 5, windowMs: 60_000 });

  function store(prefix: string): RedisStore {
    return new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), prefix, unsafeTestTime: true });
  }

  test('one key under several policies shares a slot, so the call is atomic', async () => {
    const s = store('c1:');
    const slots = [perSecond, perMinute].map((p) => hashSlotOf(s.bind(p).entryOf('user:42').redisKey));
    assert.equal(slots[0], slots[1]);
    await s.bind(perMinute).consume('user:42', 5, 0);
    const refused = await s.consumeAll(
      [
        { policy: perSecond, key: 'user:42' },
        { policy: perMinute, key: 'user:42' },
      ],
      0,
    );
    assert.equal(refused.allowed, false);
    assert.equal((await s.bind(perSecond).peek('user:42', 0, 0)).remaining, 3);
  });

  test('keys in different slots: a refusal on the first look charges nothing and sends no charge', async () => {
    const { adapter, charges } = chargeCounting(ioredisAdapter(get().client));
    const s = new RedisStore({ timeoutMs: DECIDES, adapter, prefix: 'c2:', unsafeTestTime: true });
    const bucket = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
    const [a, b] = ['ip:1.2.3.4', 'user:7'];
    assert.notEqual(hashSlotOf(s.bind(bucket).entryOf(a).redisKey), hashSlotOf(s.bind(perMinute).entryOf(b).redisKey));
    const both = await s.consumeAll(
      [
        { policy: bucket, key: a },
        { policy: perMinute, key: b, cost: 4 },
      ],
      0,
    );
    assert.equal(both.allowed, true);
    assert.equal(charges(), 2, 'admitted: one charge script per slot');
    assert.equal((await s.bind(bucket).peek(a, 0, 0)).remaining, 2);
    const refused = await s.consumeAll(
      [
        { policy: bucket, key: a, cost: 2 },
        { policy: perMinute, key: b, cost: 2 },
      ],
      0,
    );
    assert.equal(refused.allowed, false);
    assert.deepEqual(
      refused.decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.equal(charges(), 2, 'refused on the look: no charge script was sent');
    assert.equal((await s.bind(bucket).peek(a, 0, 0)).remaining, 2);
    assert.equal((await s.bind(perMinute).peek(b, 0, 0)).remaining, 1);
  });

  test('a request that takes the room between the look and the charge: the slot that charged is refunded', async () => {
    const plain = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'c5:',
      unsafeTestTime: true,
    });
    const bucket = tokenBucket({ capacity: 3, refillPerSecond: 0.001 });
    const [a, b] = ['ip:9.9.9.9', 'user:8'];
    let raced: Promise<unknown> | undefined;
    const { adapter } = chargeCounting(
      ioredisAdapter(get().client),
      () => (raced ??= plain.bind(perMinute).consume(b, 5, 0)),
    );
    const s = new RedisStore({ timeoutMs: DECIDES, adapter, prefix: 'c5:', unsafeTestTime: true });
    const result = await s.consumeAll(
      [
        { policy: bucket, key: a, cost: 2 },
        { policy: perMinute, key: b },
      ],
      0,
    );
    assert.equal(result.allowed, false);
    assert.deepEqual(
      result.decisions.map((d) => d.allowed),
      [true, false],
      'a charged, b taken by the racer',
    );
    assert.equal((await s.bind(bucket).peek(a, 0, 0)).remaining, 3, 'a was refunded');
  });

  test('the neighbour bound: an exhausted user never takes room from the IP it shares (10 trials of 60 + 20 at once)', async () => {
    const ipPolicy = tokenBucket({ capacity: 20, refillPerSecond: 0.001 });
    const userPolicy = tokenBucket({ capacity: 1, refillPerSecond: 0.001 });
    for (let trial = 0; trial < 10; trial++) {
      const s = new RedisStore({
        timeoutMs: DECIDES,
        adapter: ioredisAdapter(get().client),
        prefix: `c6-${trial}:`,
        onError: 'throw',
      });
      const ip = 'ip:10.0.0.1';
      await s.bind(userPolicy).consume('user:greedy', 1, Number.NaN); // exhausted
      const request = (user: string): Promise<boolean> =>
        s
          .consumeAll([
            { policy: ipPolicy, key: ip },
            { policy: userPolicy, key: user },
          ])
          .then((r) => r.allowed);
      const greedy = Array.from({ length: 60 }, () => request('user:greedy'));
      const neighbours = Array.from({ length: 20 }, (_, i) => request(`user:n${i}`));
      const [g, n] = await Promise.all([Promise.all(greedy), Promise.all(neighbours)]);
      assert.equal(g.filter(Boolean).length, 0, `trial ${trial}: the exhausted user is refused`);
      assert.equal(n.filter(Boolean).length, 20, `trial ${trial}: every neighbour fits in the IP's 20 and is admitted`);
      assert.equal(
        (await s.bind(ipPolicy).peek(ip, 0, Number.NaN)).remaining,
        0,
        `trial ${trial}: the IP was charged by the neighbours only`,
      );
    }
  });

  test('node-redis: a cluster client is told apart without being told; { cluster: false } on one is refused', async () => {
    const ports = get().servers.ports.slice(0, 3);
    const cluster = await createCluster({
      rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })),
    }).connect();
    beforeStop(() => cluster.close());
    const single = createClient({ url: `redis://127.0.0.1:${ports[0]!}` });
    assert.equal(nodeRedisAdapter(single).cluster, false, 'a single client is not a cluster');
    assert.equal(nodeRedisAdapter(cluster).cluster, true);
    assert.throws(
      () => nodeRedisAdapter(cluster, { cluster: false }),
      (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && /lists its masters/.test(e.message),
    );
    assert.throws(
      () => nodeRedisAdapter({} as never),
      (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
    );

    const untold = new RedisStore({
      timeoutMs: DECIDES,
      adapter: nodeRedisAdapter(cluster),
      prefix: 'c4:',
      onError: 'throw',
    });
    const requests = [
      { policy: perMinute, key: 'ip:1.2.3.4' },
      { policy: perMinute, key: 'user:7' },
    ];
    assert.equal((await untold.consumeAll(requests)).allowed, true);
    // 50 keys in one tick: batched per slot, never CROSSSLOT (each would reject under 'throw').
    const keys = Array.from({ length: 50 }, (_, i) => `k:${i}`);
    const slots = new Set(keys.map((key) => hashSlotOf(untold.bind(perMinute).entryOf(key).redisKey)));
    assert.ok(slots.size > 40, `${slots.size} slots`);
    for (let round = 0; round < 3; round++) {
      const decisions = await Promise.all(keys.map((key) => untold.bind(perMinute).consume(key, 1, Number.NaN)));
      assert.ok(
        decisions.every((d) => d.reason === 'ok' && d.remaining === 4 - round),
        `round ${round}`,
      );
    }
  });
});
