import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Cluster, Redis } from 'ioredis';
import { createCluster } from 'redis';
import { FloodgateError, Limiter, ManualClock, tokenBucket, type Decision } from '../../src/index.js';
import { NodeCircuits } from '../../src/stores/redis/node-circuits.js';
import {
  BATCH_SCRIPT,
  RedisStore,
  disconnectIoredis,
  hashSlotOf,
  ioredisAdapter,
  nodeRedisAdapter,
  type OnError,
  type RedisAdapter,
  type RedisTable,
} from '../../src/stores/redis/index.js';
import { startRedisCluster, type RedisServers } from '../support/redis-server.js';
import { runs } from '../support/sweep.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// One circuit per Redis Cluster master: a master that fails or hangs only sends the keys it serves
// to the failure policy. First against fake adapters (no Redis), then a real cluster whose master
// is stopped (SIGSTOP) and resumed.

const policy = tokenBucket({ capacity: 1e6, refillPerSecond: 1e6 });

type Mode = 'ok' | 'fail' | 'hang';

/** FakeCluster is an adapter over pretend nodes, each answering, failing or hanging as set. */
interface FakeCluster {
  readonly adapter: RedisAdapter;
  set(node: string, mode: Mode): void;
  /** calls returns how many scripts reached `node`. */
  calls(node: string): number;
}

/**
 * fakeCluster returns an adapter whose scripts reach the node `serving` names for their first key's
 * slot. The adapter tells the store that node through `nodeOf` when `tell` is true; `cluster`
 * false makes it a single Redis (which still routes by slot here, to fail part of the keys).
 */
function fakeCluster(
  serving: (slot: number) => string,
  options: { tell?: boolean; cluster?: boolean; nodeOf?: (slot: number) => string | undefined } = {},
): FakeCluster {
  const modes = new Map<string, Mode>();
  const calls = new Map<string, number>();
  const answer = (script: string, keys: readonly string[]): Promise<unknown> => {
    const node = serving(hashSlotOf(keys[0]!));
    calls.set(node, (calls.get(node) ?? 0) + 1);
    const mode = modes.get(node) ?? 'ok';
    if (mode === 'hang') return new Promise(() => {});
    if (mode === 'fail') return Promise.reject(new Error(`connect ECONNREFUSED ${node}`));
    if (script === BATCH_SCRIPT.sha1 || script === BATCH_SCRIPT.source)
      return Promise.resolve('1,999,0,0,'.repeat(keys.length));
    return Promise.resolve(keys.flatMap(() => ['1', '999', '0', '0']));
  };
  const adapter: RedisAdapter = { cluster: options.cluster ?? true, evalsha: answer, eval: answer };
  if (options.tell ?? true) adapter.nodeOf = options.nodeOf ?? serving;
  return { adapter, set: (node, mode) => void modes.set(node, mode), calls: (node) => calls.get(node) ?? 0 };
}

/** Slots below 8192 are on node A, the rest on B. */
const halves = (slot: number): string => (slot < 8192 ? 'A:1' : 'B:2');

/** keysWhere returns `count` user keys of `table` whose Redis key's slot passes `where`. */
function keysWhere(table: RedisTable, count: number, where: (slot: number) => boolean): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    if (where(hashSlotOf(table.entryOf(`user:${i}`).redisKey))) keys.push(`user:${i}`);
  }
  return keys;
}

function store(
  adapter: RedisAdapter,
  more: {
    onError?: OnError;
    probeIntervalMs?: number;
    maxBatchSize?: number;
    timeoutMs?: number;
    clock?: ManualClock;
    timers?: ManualClock;
  } = {},
): RedisStore {
  return new RedisStore({
    timeoutMs: DECIDES,
    adapter,
    failuresToOpen: 3,
    probeIntervalMs: 60_000,
    maxBatchSize: 1,
    ...more,
  });
}

function storeError(message: RegExp): (error: unknown) => boolean {
  return (error) => error instanceof FloodgateError && error.code === 'STORE_ERROR' && message.test(error.message);
}

describe('a circuit per node, against fake adapters', () => {
  test("failures on node A open only A's circuit; keys on B keep being sent and answered", async () => {
    const fake = fakeCluster(halves);
    const s = store(fake.adapter, { onError: 'fail-closed' });
    const closed = s.bind(policy);
    const [onA] = keysWhere(closed, 1, (slot) => slot < 8192);
    const [onB] = keysWhere(closed, 1, (slot) => slot >= 8192);
    fake.set('A:1', 'fail');
    for (let i = 0; i < 20; i++) {
      const [a, b] = await Promise.all([closed.consume(onA!, 1, 0), closed.consume(onB!, 1, 0)]);
      assert.equal(a.reason, 'fail-closed');
      assert.equal(b.reason, 'ok');
    }
    assert.equal(fake.calls('A:1'), 3, 'three failures, then nothing more sent to A');
    assert.equal(fake.calls('B:2'), 20, 'every decision on B was sent');
    const thrown = s.withOnError('throw').bind(policy);
    await assert.rejects(
      Promise.resolve(thrown.consume(onA!, 1, 0)),
      storeError(
        /^RedisStore: the [\w-]+ script was not sent: Redis node A:1 failed repeatedly \(the circuit is open\), next probe in \d+ ms$/,
      ),
    );
    assert.equal((await thrown.consume(onB!, 1, 0)).reason, 'ok');
  });

  test("fail-closed retries when the key's own node is next tried", async () => {
    const fake = fakeCluster(halves);
    const clock = new ManualClock();
    const closed = store(fake.adapter, { onError: 'fail-closed', clock, timers: clock }).bind(policy);
    const [onA] = keysWhere(closed, 1, (slot) => slot < 8192);
    const [onB] = keysWhere(closed, 1, (slot) => slot >= 8192);
    fake.set('A:1', 'fail');
    for (let i = 0; i < 3; i++) await closed.consume(onA!, 1, 0);
    clock.advance(10_000);
    fake.set('B:2', 'fail');
    const [a, b] = await Promise.all([closed.consume(onA!, 1, 0), closed.consume(onB!, 1, 0)]);
    assert.equal(a.retryAfterMs, 50_000, 'A is open: its next probe is a minute after it opened');
    assert.equal(b.retryAfterMs, 1, 'B failed once and is still closed: it is tried again at once');
  });

  test("batches of one tick: A's scripts fail, B's are answered; then nothing is sent to A", async () => {
    const fake = fakeCluster(halves);
    const open = store(fake.adapter, { onError: 'fail-open', maxBatchSize: 128 }).bind(policy);
    const onA = keysWhere(open, 10, (slot) => slot < 8192);
    const onB = keysWhere(open, 10, (slot) => slot >= 8192);
    fake.set('A:1', 'fail');
    const reasons = async (keys: readonly string[]): Promise<string[]> =>
      (await Promise.all(keys.map((k) => open.consume(k, 1, 0)))).map((d) => d.reason);
    const [first, firstB] = await Promise.all([reasons(onA), reasons(onB)]);
    assert.deepEqual(new Set(first), new Set(['fail-open']));
    assert.deepEqual(new Set(firstB), new Set(['ok']));
    const sentToA = fake.calls('A:1');
    const sentToB = fake.calls('B:2');
    const [again, againB] = await Promise.all([reasons(onA), reasons(onB)]);
    assert.deepEqual(new Set(again), new Set(['fail-open']));
    assert.deepEqual(new Set(againB), new Set(['ok']));
    assert.equal(fake.calls('A:1'), sentToA, "A's circuit is open: nothing sent");
    assert.ok(fake.calls('B:2') > sentToB, 'B still sent');
  });

  test('a node recovers through its own probe', async () => {
    const fake = fakeCluster(halves);
    const clock = new ManualClock();
    const closed = store(fake.adapter, { onError: 'fail-closed', probeIntervalMs: 30, clock }).bind(policy);
    const [onA] = keysWhere(closed, 1, (slot) => slot < 8192);
    fake.set('A:1', 'fail');
    for (let i = 0; i < 3; i++) await closed.consume(onA!, 1, 0);
    fake.set('A:1', 'ok');
    clock.advance(29);
    assert.equal((await closed.consume(onA!, 1, 0)).reason, 'fail-closed', 'open until the probe is due');
    clock.advance(1);
    assert.equal((await closed.consume(onA!, 1, 0)).reason, 'ok', 'the probe got an answer');
    assert.equal((await closed.consume(onA!, 1, 0)).reason, 'ok');
  });

  test("after a failover the slots' new master starts with a closed circuit", async () => {
    let failedOver = false;
    const fake = fakeCluster((slot) => (slot < 8192 ? (failedOver ? 'C:3' : 'A:1') : 'B:2'));
    const closed = store(fake.adapter, { onError: 'fail-closed' }).bind(policy);
    const [onA] = keysWhere(closed, 1, (slot) => slot < 8192);
    fake.set('A:1', 'fail');
    for (let i = 0; i < 5; i++) assert.equal((await closed.consume(onA!, 1, 0)).reason, 'fail-closed');
    failedOver = true;
    assert.equal((await closed.consume(onA!, 1, 0)).reason, 'ok', 'sent to C at once, with no probe interval to wait');
    assert.deepEqual([fake.calls('A:1'), fake.calls('C:3')], [3, 1]);
  });

  test('a single Redis keeps one circuit for every key, as before', async () => {
    const fake = fakeCluster(halves, { cluster: false, tell: false });
    const s = store(fake.adapter, { onError: 'fail-closed' });
    const closed = s.bind(policy);
    const [onA] = keysWhere(closed, 1, (slot) => slot < 8192);
    const [onB] = keysWhere(closed, 1, (slot) => slot >= 8192);
    fake.set('A:1', 'fail');
    for (let i = 0; i < 3; i++) await closed.consume(onA!, 1, 0);
    assert.equal((await closed.consume(onB!, 1, 0)).reason, 'fail-closed', 'the one circuit is open for every key');
    assert.equal(fake.calls('B:2'), 0);
    await assert.rejects(
      Promise.resolve(s.withOnError('throw').bind(policy).consume(onB!, 1, 0)),
      storeError(/script was not sent: Redis failed repeatedly \(the circuit is open\)/),
    );
  });

  test('a cluster adapter without nodeOf: slots share a circuit per group of 1024', async () => {
    for (const variant of [{ tell: false }, { nodeOf: (): undefined => undefined }]) {
      const fake = fakeCluster(halves, variant);
      const s = store(fake.adapter, { onError: 'fail-closed' });
      const closed = s.bind(policy);
      const [inGroup0] = keysWhere(closed, 1, (slot) => slot < 1024);
      const [inGroup1] = keysWhere(closed, 1, (slot) => slot >= 1024 && slot < 2048);
      const [onB] = keysWhere(closed, 1, (slot) => slot >= 8192);
      fake.set('A:1', 'fail');
      for (let i = 0; i < 5; i++) await closed.consume(inGroup0!, 1, 0);
      assert.equal(fake.calls('A:1'), 3, 'slots 0-1023: open after three failures');
      await assert.rejects(
        Promise.resolve(s.withOnError('throw').bind(policy).consume(inGroup0!, 1, 0)),
        storeError(/Redis for slots 0-1023 \(node unknown\) failed repeatedly/),
      );
      assert.equal((await closed.consume(inGroup1!, 1, 0)).reason, 'fail-closed');
      assert.equal(fake.calls('A:1'), 4, 'slots 1024-2047 have their own circuit, still closed: sent');
      assert.equal((await closed.consume(onB!, 1, 0)).reason, 'ok', 'keys of the healthy node are answered');
    }
  });

  test('a hung node times out with its name; the other node answers at once', async () => {
    const fake = fakeCluster(halves);
    const clock = new ManualClock();
    const thrown = store(fake.adapter, { timeoutMs: 50, onError: 'throw', clock, timers: clock }).bind(policy);
    const [onA] = keysWhere(thrown, 1, (slot) => slot < 8192);
    const [onB] = keysWhere(thrown, 1, (slot) => slot >= 8192);
    fake.set('A:1', 'hang');
    const calls = [thrown.consume(onA!, 1, 0), thrown.consume(onB!, 1, 0)] as const;
    assert.equal(clock.timerCount(), 1, 'one deadline timer for both calls');
    await new Promise((resolve) => setImmediate(resolve)); // B answers
    clock.advance(49);
    assert.equal(clock.timerCount(), 1, 'A still has 1 ms');
    clock.advance(1);
    const [a, b] = await Promise.allSettled(calls);
    assert.ok(
      a.status === 'rejected' &&
        a.reason instanceof FloodgateError &&
        a.reason.code === 'STORE_TIMEOUT' &&
        /no answer from Redis node A:1 within 50 ms/.test(a.reason.message),
    );
    assert.ok(b.status === 'fulfilled' && b.value.reason === 'ok');
  });

  test('an adapter whose nodeOf is not a function is refused', () => {
    const { adapter } = fakeCluster(halves);
    assert.throws(
      () => new RedisStore({ timeoutMs: DECIDES, adapter: { ...adapter, nodeOf: 'A:1' as unknown as () => string } }),
      /RedisStore.adapter must be a RedisAdapter/,
    );
  });
});

describe('NodeCircuits', () => {
  test('steps at fixed times: one circuit per node, retry time per key', () => {
    const clock = new ManualClock();
    const nodeOf = (slot: number): string => (slot < 8192 ? 'A' : 'B');
    const circuits = new NodeCircuits({ failuresToOpen: 2, probeIntervalMs: 100, clock, nodeOf });
    const firstKey = (where: (slot: number) => boolean): string => {
      for (let i = 0; ; i++) if (where(hashSlotOf(`x:{${i}}`))) return `x:{${i}}`;
    };
    const [a, b] = [firstKey((slot) => slot < 8192), firstKey((slot) => slot >= 8192)];
    const A = circuits.circuitOf([a]);
    const B = circuits.circuitOf([b]);
    const steps: Array<[number, () => unknown, unknown]> = [
      [0, () => A === circuits.circuitOf([a]) && A !== B, true],
      [0, () => A.name, 'Redis node A'],
      [0, () => A.failed(false), undefined],
      [10, () => A.failed(false), undefined],
      [10, () => A.admit(), 'refuse'],
      [10, () => B.admit(), 'send'],
      [40, () => circuits.retryInMs(a), 70],
      [40, () => circuits.retryInMs(b), 0],
      [110, () => A.admit(), 'probe'],
      [115, () => A.succeeded(true), undefined],
      [115, () => circuits.retryInMs(a), 0],
      [115, () => circuits.size, 2],
    ];
    for (const [atMs, step, expected] of steps) {
      clock.set(atMs);
      assert.equal(step(), expected, `at ${atMs} ms`);
    }
  });

  test('stays bounded: idle circuits are forgotten first, then the oldest open ones', () => {
    const clock = new ManualClock();
    let node = 'n0';
    const circuits = new NodeCircuits({
      failuresToOpen: 1,
      probeIntervalMs: 100,
      clock,
      nodeOf: () => node,
      maxNodes: 4,
    });
    for (let i = 0; i < 1000; i++) {
      node = `n${i}`;
      circuits.circuitOf(['k']);
      assert.ok(circuits.size <= 4, `${circuits.size} circuits after ${i + 1} nodes`);
    }
    const open = [];
    for (let i = 0; i < 6; i++) {
      node = `dead${i}`;
      const circuit = circuits.circuitOf(['k']);
      circuit.failed(false);
      open.push(circuit);
    }
    assert.equal(circuits.size, 4);
    node = 'dead5';
    assert.equal(circuits.circuitOf(['k']), open[5], 'the newest open circuits are kept');
    node = 'dead0';
    assert.equal(circuits.circuitOf(['k']).admit(), 'send', 'the oldest was forgotten: a fresh circuit');
    clock.set(200); // every probe is due: the open circuits are idle now
    node = 'fresh';
    circuits.circuitOf(['k']);
    assert.ok(circuits.size <= 2, `${circuits.size} circuits`);
  });

  test('unknown nodes: at most 16 circuits, one per 1024 slots, named by their slots', () => {
    const circuits = new NodeCircuits({ failuresToOpen: 1, probeIntervalMs: 100 });
    const names = new Set<string>();
    for (let i = 0; i < 5000; i++) names.add(circuits.circuitOf([`k${i}`]).name);
    assert.equal(circuits.size, 16);
    assert.ok(
      names.has('Redis for slots 0-1023 (node unknown)') && names.has('Redis for slots 15360-16383 (node unknown)'),
    );
  });
});

describe('the adapters name the master of a slot', () => {
  const evalFake = (): Promise<unknown> => Promise.resolve(null);

  test('ioredis: slots[slot][0] of a Cluster; nothing on a single Redis', () => {
    const slots: string[][] = [];
    slots[7] = ['10.0.0.1:7000', '10.0.0.2:7001'];
    const cluster = ioredisAdapter({ isCluster: true, slots, evalsha: evalFake, eval: evalFake });
    assert.equal(cluster.nodeOf?.(7), '10.0.0.1:7000');
    assert.equal(cluster.nodeOf?.(8), undefined, 'no map for that slot yet');
    assert.equal(ioredisAdapter({ evalsha: evalFake, eval: evalFake }).nodeOf, undefined);
  });

  test('node-redis: slots[slot].master.address with { cluster: true }; nothing without', () => {
    const slots = [];
    slots[7] = { master: { address: '10.0.0.1:7000' } };
    const client = { slots, evalSha: evalFake, eval: evalFake };
    assert.equal(nodeRedisAdapter(client, { cluster: true }).nodeOf?.(7), '10.0.0.1:7000');
    assert.equal(nodeRedisAdapter(client, { cluster: true }).nodeOf?.(8), undefined);
    assert.equal(nodeRedisAdapter(client).nodeOf, undefined);
  });
});

describe('hashSlotOf', () => {
  /** The slot as Redis computes it: CRC16 (XMODEM), bit by bit, of the tag's UTF-8 bytes. */
  function referenceSlot(redisKey: string): number {
    let bytes = Buffer.from(redisKey, 'utf8');
    const open = bytes.indexOf(0x7b);
    const close = open < 0 ? -1 : bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
    let crc = 0;
    for (const byte of bytes) {
      crc ^= byte << 8;
      for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc & 16383;
  }

  test('known slots and hash tags (from the Redis Cluster spec)', () => {
    assert.equal(hashSlotOf('123456789'), 0x31c3 & 16383, 'the CRC16 check value');
    assert.equal(hashSlotOf('{user1000}.following'), hashSlotOf('user1000'));
    assert.equal(hashSlotOf('foo{bar}{zap}'), hashSlotOf('bar'));
    assert.equal(hashSlotOf('foo{}{bar}'), referenceSlot('foo{}{bar}'), 'an empty tag: the whole key is hashed');
    assert.notEqual(hashSlotOf('foo{}{bar}'), hashSlotOf('bar'));
    assert.equal(hashSlotOf('foo{{bar}}zap'), hashSlotOf('{bar'));
  });

  test('equals the byte-wise reference for any text, including surrogates and braces', () => {
    for (const key of ['\ud800', 'a\udc00b', '{\ud83d}x', '{😀}', '{é€😀\ud800}', '{}', '}{', '{', 'x{\udbff']) {
      assert.equal(hashSlotOf(key), referenceSlot(key), JSON.stringify(key));
    }
    const text = fc.string({
      unit: fc.oneof(
        fc.constantFrom('{', '}', '\ud83d', '\ude00', '\ud800'),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
      ),
    });
    fc.assert(
      fc.property(text, (key) => hashSlotOf(key) === referenceSlot(key)),
      { numRuns: runs(5000) },
    );
  });
});

/** Topology is the masters of a running cluster, from CLUSTER SLOTS. */
interface Topology {
  /** The index in `servers.ports` of each master's port. */
  readonly masterIndexes: readonly number[];
  portOfSlot(slot: number): number;
}

async function topologyOf(servers: RedisServers): Promise<Topology> {
  const probe = new Redis({ host: '127.0.0.1', port: servers.ports[0]! });
  try {
    const reply = (await probe.call('CLUSTER', 'SLOTS')) as Array<
      [number, number, [string, number, ...unknown[]], ...unknown[]]
    >;
    const ranges = reply.map(([start, end, [, port]]) => ({ start, end, port }));
    const masterIndexes = [...new Set(ranges.map((r) => servers.ports.indexOf(r.port)))];
    return { masterIndexes, portOfSlot: (slot) => ranges.find((r) => slot >= r.start && slot <= r.end)!.port };
  } finally {
    probe.disconnect();
  }
}

describe('a circuit per master on a real Redis Cluster', () => {
  // A long cluster-node-timeout: the stopped master is never failed over, so the other masters
  // keep serving their slots (a master marked FAIL would make every node answer CLUSTERDOWN).
  const TIMEOUT_MS = 200;
  let servers: RedisServers;
  let io: Cluster;
  const cleanups: Array<() => unknown> = [];

  before(async () => {
    servers = await startRedisCluster({ nodeTimeoutMs: 30_000 });
    io = new Cluster(servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })));
    io.on('error', () => {});
  });

  after(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await disconnectIoredis(io);
    await servers.stop();
  });

  /** Decides every key once on each table, all in one tick; returns the reasons by table and key. */
  async function round(
    tables: Readonly<Record<string, (key: string) => Promise<Decision>>>,
    keys: readonly string[],
  ): Promise<Map<string, string>> {
    const reasons = new Map<string, string>();
    await Promise.all(
      Object.entries(tables).flatMap(([name, decide]) =>
        keys.map(async (key) => reasons.set(`${name} ${key}`, (await decide(key)).reason)),
      ),
    );
    return reasons;
  }

  async function stopOneMaster(
    adapter: RedisAdapter,
    prefix: string,
    t: { diagnostic(message: string): void },
  ): Promise<void> {
    const store = new RedisStore({ adapter, prefix, timeoutMs: TIMEOUT_MS, probeIntervalMs: 100 });
    const closed = new Limiter({ policy, store: store.withOnError('fail-closed') });
    const local = store.withOnError({ fallback: 'local', share: 0.5 }).bind(policy);
    const table = store.bind(policy);
    const thrown = store.withOnError('throw').bind(policy);
    const tables = {
      closed: (key: string) => closed.consume(key),
      local: (key: string) => Promise.resolve(local.consume(key, 1, Date.now())),
    };
    const { masterIndexes, portOfSlot } = await topologyOf(servers);
    assert.equal(masterIndexes.length, 3);
    const slotOf = (key: string): number => hashSlotOf(table.entryOf(key).redisKey);
    const keysOf = masterIndexes.map((index) =>
      keysWhere(table, 4, (slot) => portOfSlot(slot) === servers.ports[index]),
    );
    const all = keysOf.flat();
    const healthyByRedis = async (): Promise<boolean> =>
      [...(await round(tables, all)).values()].every((reason) => reason === 'ok');
    for (let i = 0; i < 50 && !(await healthyByRedis()); i++) await sleep(100);
    assert.ok(await healthyByRedis(), 'every key is decided by Redis before the fault');
    for (const key of all)
      assert.equal(
        adapter.nodeOf?.(slotOf(key)),
        `127.0.0.1:${portOfSlot(slotOf(key))}`,
        'nodeOf agrees with CLUSTER SLOTS',
      );

    const stopped = masterIndexes[0]!;
    const stoppedPort = servers.ports[stopped]!;
    const [stoppedKeys, healthyKeys] = [keysOf[0]!, keysOf.slice(1).flat()];
    servers.signal(stopped, 'SIGSTOP');
    try {
      let rounds = 0;
      for (const started = performance.now(); performance.now() - started < 1000; rounds++) {
        const reasons = await round(tables, all);
        for (const key of healthyKeys) {
          assert.equal(reasons.get(`closed ${key}`), 'ok', `round ${rounds}: ${key} on a healthy master`);
          assert.equal(reasons.get(`local ${key}`), 'ok', `round ${rounds}: ${key} on a healthy master`);
        }
        for (const key of stoppedKeys) {
          assert.equal(reasons.get(`closed ${key}`), 'fail-closed', `round ${rounds}: ${key} on the stopped master`);
          assert.equal(reasons.get(`local ${key}`), 'fallback', `round ${rounds}: ${key} on the stopped master`);
        }
        await sleep(30);
      }
      const errors = await Promise.allSettled(stoppedKeys.map((key) => Promise.resolve(thrown.consume(key, 1, 0))));
      const node = `Redis node 127.0.0.1:${stoppedPort}`;
      for (const e of errors)
        assert.ok(
          e.status === 'rejected' && e.reason instanceof FloodgateError && e.reason.message.includes(node),
          String(e.status === 'rejected' ? e.reason : e.value),
        );
      assert.ok(
        errors.some(
          (e) =>
            e.status === 'rejected' &&
            (e.reason as Error).message.includes(`${node} failed repeatedly (the circuit is open)`),
        ),
        "the stopped master's circuit is open",
      );
      t.diagnostic(`${rounds} rounds while the master on port ${stoppedPort} was stopped`);
    } finally {
      servers.signal(stopped, 'SIGCONT');
    }
    let recovered = false;
    for (let i = 0; i < 50 && !recovered; i++) {
      await sleep(100);
      recovered = await healthyByRedis();
    }
    assert.ok(recovered, 'every key is decided by Redis again after SIGCONT');
  }

  test('hashSlotOf agrees with CLUSTER KEYSLOT', async () => {
    for (const key of ['somekey', 'foo{hash_tag}', 'floodgate:gcra:0a1b2c3d:{user:42}', '{é€😀}', 'x{}y', 'a}b{c']) {
      assert.equal(hashSlotOf(key), await io.cluster('KEYSLOT', key), JSON.stringify(key));
    }
  });

  test('ioredis Cluster: a stopped master fails only its own keys, then recovers', async (t) => {
    await stopOneMaster(ioredisAdapter(io), 'node-io:', t);
  });

  test('node-redis createCluster: a stopped master fails only its own keys, then recovers', async (t) => {
    const rootNodes = servers.ports.slice(0, 3).map((port) => ({ url: `redis://127.0.0.1:${port}` }));
    const cluster = await createCluster({ rootNodes }).connect();
    cluster.on('error', () => {});
    cleanups.push(() => cluster.destroy());
    await stopOneMaster(nodeRedisAdapter(cluster, { cluster: true }), 'node-nr:', t);
  });
});
