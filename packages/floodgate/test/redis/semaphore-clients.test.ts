import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { FloodgateError } from '../../src/core/errors.js';
import {
  RedisSemaphore,
  SEMAPHORE_SCRIPT,
  hashSlotOf,
  ioredisAdapter,
  nodeRedisAdapter,
  type RedisAdapter,
  type RedisSemaphoreOptions,
} from '../../src/redis.js';
import { beforeStop, useRedis, useRedisCluster } from './setup.js';

// RedisSemaphore through the clients semaphore.test.ts does not use: node-redis on one server, and
// ioredis and node-redis on a six-node Redis Cluster. Each client gets the same tests (its own key
// prefix); the cluster ones also spread semaphores over every master.
const standalone = useRedis();
const cluster = useRedisCluster();

/** Client is a semaphore adapter plus the raw key commands the tests check Redis with. */
interface Client {
  readonly adapter: RedisAdapter;
  set(key: string, value: string): Promise<unknown>;
  del(key: string): Promise<unknown>;
  exists(key: string): Promise<number>;
}

let connected: Promise<Map<string, Client>> | undefined;

/** The clients by label, connected on first use (the servers start in before hooks). */
function connect(): Promise<Map<string, Client>> {
  connected ??= (async () => {
    const single = await createClient({
      socket: { host: '127.0.0.1', port: standalone().servers.ports[0]! },
    }).connect();
    beforeStop(() => single.close());
    const io = cluster().client;
    // As in cluster.test.ts: the masters as root nodes; the nodes announce themselves on 127.0.0.1.
    const rootNodes = cluster()
      .servers.ports.slice(0, 3)
      .map((port) => ({ url: `redis://127.0.0.1:${port}` }));
    const nodeCluster = await createCluster({ rootNodes }).connect();
    beforeStop(() => nodeCluster.close());
    return new Map<string, Client>([
      [
        'node-redis',
        {
          adapter: nodeRedisAdapter(single),
          set: (k, v) => single.set(k, v),
          del: (k) => single.del(k),
          exists: (k) => single.exists(k),
        },
      ],
      [
        'ioredis cluster',
        {
          adapter: ioredisAdapter(io),
          set: (k, v) => io.set(k, v),
          del: (k) => io.del(k),
          exists: (k) => io.exists(k),
        },
      ],
      [
        'node-redis cluster',
        {
          adapter: nodeRedisAdapter(nodeCluster, { cluster: true }),
          set: (k, v) => nodeCluster.set(k, v),
          del: (k) => nodeCluster.del(k),
          exists: (k) => nodeCluster.exists(k),
        },
      ],
    ]);
  })();
  return connected;
}

async function clientOf(label: string): Promise<Client> {
  return (await connect()).get(label)!;
}

function code(c: string): (error: unknown) => boolean {
  return (error) => error instanceof FloodgateError && error.code === c;
}

function option(c: string, name: string): (error: unknown) => boolean {
  return (error) => code(c)(error) && (error as FloodgateError).option === name;
}

function keyOf(prefix: string, name: string): string {
  return `${prefix}semaphore:{${name}}`;
}

/** The tests every client runs, on keys under `prefix`. */
function clientSuite(label: string, prefix: string): void {
  let names = 0;

  /** semaphores returns `count` instances sharing one new name: as if each ran in its own process. */
  function semaphores(
    client: Client,
    count: number,
    options: Partial<RedisSemaphoreOptions> = {},
  ): { name: string; key: string; sems: RedisSemaphore[] } {
    const name = `t${names++}`;
    const make = () =>
      new RedisSemaphore({ adapter: client.adapter, prefix, name, permits: 1, leaseMs: 10_000, ...options });
    return { name, key: keyOf(prefix, name), sems: Array.from({ length: count }, make) };
  }

  describe(`RedisSemaphore on ${label}`, () => {
    test('grants up to permits across instances, refuses a one-try caller, and a release serves a waiter', async () => {
      const client = await clientOf(label);
      const { name, key, sems } = semaphores(client, 2, { permits: 2, pollMs: 5000 });
      const [a, b] = sems as [RedisSemaphore, RedisSemaphore];
      const p1 = await a.acquire();
      const p2 = await b.acquire();
      assert.notEqual(p1.id, p2.id);
      await assert.rejects(a.acquire({ maxWaitMs: 0 }), code('WAIT_TIMEOUT'));
      assert.equal(await b.holders(), 2);
      assert.equal(await a.available(), 0);
      assert.equal(await client.exists(key), 1, 'the permits live under the documented key');

      // Same instance: the local release wakes the waiter (the 5 s poll could not).
      const local = a.acquire({ maxWaitMs: 3000 });
      await sleep(20);
      assert.equal(a.waiting, 1);
      assert.equal(await p1.release(), true);
      const p3 = await local;
      // Another instance: its waiter finds the freed permit on its poll.
      const c = new RedisSemaphore({ adapter: client.adapter, prefix, name, permits: 2, leaseMs: 10_000, pollMs: 20 });
      const remote = c.acquire({ maxWaitMs: 3000 });
      await sleep(20);
      assert.equal(c.waiting, 1);
      assert.equal(await p2.release(), true);
      const p4 = await remote;
      assert.equal(await a.holders(), 2);
      await Promise.all([p3.release(), p4.release()]);
      assert.equal(await a.holders(), 0);
      assert.equal(await client.exists(key), 0, 'the last release leaves no key behind');
    });

    test('instances acquiring at once never exceed the permits, and reach them', async () => {
      const PERMITS = 3;
      const { sems } = semaphores(await clientOf(label), 4, { permits: PERMITS, pollMs: 10 });
      let holding = 0;
      let maxHolding = 0;
      let holds = 0;
      let maxInRedis = 0;
      let running = true;
      // Redis's own count, sampled while the lanes run, must stay within the permits too.
      const watch = (async () => {
        while (running) {
          maxInRedis = Math.max(maxInRedis, await sems[0]!.holders());
          await sleep(2);
        }
      })();
      const lane = async (sem: RedisSemaphore): Promise<void> => {
        for (let i = 0; i < 5; i++) {
          const permit = await sem.acquire({ maxWaitMs: 5000 });
          holds++;
          maxHolding = Math.max(maxHolding, ++holding);
          await sleep(3);
          holding--;
          assert.equal(await permit.release(), true);
        }
      };
      try {
        await Promise.all(sems.flatMap((sem) => [lane(sem), lane(sem), lane(sem)]));
      } finally {
        running = false;
        await watch;
      }
      assert.equal(holds, 4 * 3 * 5);
      assert.equal(maxHolding, PERMITS);
      assert.ok(maxInRedis <= PERMITS, `Redis counted ${maxInRedis} holders`);
      assert.equal(await sems[0]!.holders(), 0);
    });

    test('a holder that never releases is reclaimed after leaseMs; its late release frees nothing', async () => {
      const { sems } = semaphores(await clientOf(label), 2, { leaseMs: 300 });
      const [dead, live] = sems as [RedisSemaphore, RedisSemaphore];
      const lost = await dead.acquire();
      await assert.rejects(live.acquire({ maxWaitMs: 0 }), code('WAIT_TIMEOUT'), 'held while the lease runs');
      const next = await live.acquire({ maxWaitMs: 3000 });
      assert.equal(await lost.renew(), false);
      assert.equal(lost.state, 'reclaimed');
      assert.equal(await lost.release(), false);
      assert.equal(await live.holders(), 1, "the late release did not free the new holder's permit");
      assert.equal(await next.release(), true);
    });

    test('bad arguments reject with INVALID_OPTION; a key Redis refuses, with STORE_ERROR', async () => {
      const client = await clientOf(label);
      const adapter = client.adapter;
      assert.throws(
        () => new RedisSemaphore({ adapter, prefix, name: 'x', permits: 0, leaseMs: 1000 }),
        option('INVALID_OPTION', 'RedisSemaphore.permits'),
      );
      assert.throws(
        () => new RedisSemaphore({ adapter, prefix, name: 'x', permits: 1, leaseMs: -5 }),
        option('INVALID_OPTION', 'RedisSemaphore.leaseMs'),
      );
      const { key, sems } = semaphores(client, 1);
      const sem = sems[0]!;
      await assert.rejects(sem.acquire({ maxWaitMs: -1 }), option('INVALID_OPTION', 'maxWaitMs'));
      await assert.rejects(sem.acquire({ signal: {} as unknown as AbortSignal }), option('INVALID_OPTION', 'signal'));
      // The client's own error for a key of the wrong type comes back as a FloodgateError.
      await client.set(key, 'not a sorted set');
      for (let i = 0; i < 3; i++) {
        await assert.rejects(
          sem.acquire({ maxWaitMs: 0 }),
          (e: unknown) => code('STORE_ERROR')(e) && /WRONGTYPE/.test((e as Error).message),
        );
      }
      await assert.rejects(sem.holders(), code('STORE_ERROR'));
      await client.del(key);
      // Answered errors say nothing of Redis's health: the circuit stayed closed.
      const permit = await sem.acquire({ maxWaitMs: 0 });
      assert.equal(await permit.release(), true);
    });
  });
}

clientSuite('node-redis', 'nr:');
clientSuite('ioredis cluster', 'ioc:');
clientSuite('node-redis cluster', 'nrc:');

/** Topology is the cluster's masters, each with a direct (non-cluster) connection, from CLUSTER SLOTS. */
interface Topology {
  readonly masters: ReadonlyMap<number, Redis>;
  portOfSlot(slot: number): number;
}

let topology: Promise<Topology> | undefined;

function topologyOf(): Promise<Topology> {
  topology ??= (async () => {
    const probe = new Redis({ host: '127.0.0.1', port: cluster().servers.ports[0]! });
    beforeStop(() => probe.disconnect());
    const reply = (await probe.call('CLUSTER', 'SLOTS')) as Array<
      [number, number, [string, number, ...unknown[]], ...unknown[]]
    >;
    const ranges = reply.map(([start, end, [, port]]) => ({ start, end, port }));
    const masters = new Map<number, Redis>();
    for (const { port } of ranges) {
      if (masters.has(port)) continue;
      const master = new Redis({ host: '127.0.0.1', port });
      beforeStop(() => master.disconnect());
      masters.set(port, master);
    }
    return { masters, portOfSlot: (slot) => ranges.find((r) => slot >= r.start && slot <= r.end)!.port };
  })();
  return topology;
}

/** Returns one semaphore name per master, with its slot (the prefix is not hashed: the name is the hash tag). */
async function namesOnEveryMaster(): Promise<Array<{ name: string; slot: number; port: number }>> {
  const { masters, portOfSlot } = await topologyOf();
  const placed = new Map<number, { name: string; slot: number; port: number }>();
  for (let i = 0; placed.size < masters.size; i++) {
    const name = `spread${i}`;
    const slot = hashSlotOf(keyOf('any:', name));
    const port = portOfSlot(slot);
    if (!placed.has(port)) placed.set(port, { name, slot, port });
  }
  return [...placed.values()];
}

function clusterSpread(label: string, prefix: string): void {
  test(`${label}: semaphores whose keys live on different masters keep their own permits`, async () => {
    const { adapter } = await clientOf(label);
    const { masters } = await topologyOf();
    const placed = await namesOnEveryMaster();
    assert.equal(placed.length, 3);
    assert.equal(new Set(placed.map((p) => p.slot)).size, 3);
    // No master knows the script yet: each acquire must fall back to EVAL on its own master.
    await Promise.all([...masters.values()].map((m) => m.script('FLUSH')));
    const pairs = placed.map((p) => {
      const make = () => new RedisSemaphore({ adapter, prefix, name: p.name, permits: 1, leaseMs: 10_000, pollMs: 20 });
      return { ...p, key: keyOf(prefix, p.name), master: masters.get(p.port)!, a: make(), b: make() };
    });
    const held = await Promise.all(pairs.map((p) => p.a.acquire({ maxWaitMs: 0 })));
    for (const [i, p] of pairs.entries()) {
      await assert.rejects(p.b.acquire({ maxWaitMs: 0 }), code('WAIT_TIMEOUT'), `${p.name} is full`);
      // Read on that master directly: the holder is there, under the key's slot.
      assert.equal(await p.master.call('CLUSTER', 'KEYSLOT', p.key), p.slot);
      assert.notEqual(
        await p.master.zscore(p.key, held[i]!.id),
        null,
        `${p.name}'s holder is on the master on port ${p.port}`,
      );
      assert.deepEqual(
        await p.master.script('EXISTS', SEMAPHORE_SCRIPT.sha1),
        [1],
        `the script was loaded on port ${p.port}`,
      );
    }
    // Releasing one semaphore's permit frees nothing of the others'.
    const waiters = pairs.map((p) => p.b.acquire({ maxWaitMs: 3000 }));
    assert.equal(await held[0]!.release(), true);
    const first = await waiters[0]!;
    assert.deepEqual(await Promise.all(pairs.map((p) => p.a.holders())), [1, 1, 1]);
    assert.deepEqual(
      pairs.map((p) => p.b.waiting),
      [0, 1, 1],
    );
    await Promise.all([first.release(), held[1]!.release(), held[2]!.release()]);
    const rest = await Promise.all(waiters.slice(1));
    await Promise.all(rest.map((p) => p.release()));
    assert.deepEqual(await Promise.all(pairs.map((p) => p.master.exists(p.key))), [0, 0, 0]);
  });
}

describe('RedisSemaphore across the masters of a cluster', () => {
  clusterSpread('ioredis cluster', 'ioc-spread:');
  clusterSpread('node-redis cluster', 'nrc-spread:');
});
