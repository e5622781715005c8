/**
 * The RLQS Redis ledger's checks, run on one Redis (`rlqs-redis.test.ts`) and on a Redis Cluster
 * (`rlqs-redis-cluster.test.ts`): the ledger against the memory ledger, batching, expiry, two
 * replicas sharing budgets, and two `floodgate ratelimit` processes sharing one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { hashSlotOf, type RedisAdapter } from 'floodgate/redis';
import { bucketKeyOf } from '../../src/ratelimit/quota/buckets.js';
import { MemoryQuotaLedger, type LedgerEntry } from '../../src/ratelimit/quota/ledger.js';
import { bucketKeysOf, sentinelKeyOf } from '../../src/ratelimit/quota/redis-calls.js';
import { RedisQuotaLedger } from '../../src/ratelimit/quota/redis-ledger.js';
import { startServiceProcess, type ServiceProcess } from './processes.js';
import { fixturePath } from './support.js';
import { grantOf, RlqsClient } from './rlqs-support.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

/** LedgerRedis is the Redis (single or cluster) the checks run on, valid from the first test on. */
export interface LedgerRedis {
  readonly adapter: RedisAdapter;
  /** keys returns every key matching `pattern`, on every master. */
  keys(pattern: string): Promise<string[]>;
  hget(key: string, field: string): Promise<string | null>;
  flushall(): Promise<unknown>;
  /** The `floodgate ratelimit` flags naming this Redis (`--redis ...` or `--redis-cluster ...`). */
  readonly flags: readonly string[];
}

/** The buckets of the checks: on a cluster, each hashes to its own slot (the cluster file asserts it). */
export const BUCKETS = ['b', 'c', 'x', 'y'] as const;

let prefixes = 0;

/** redisLedgerChecks registers the ledger-level checks on the Redis `redis()` returns. */
export function redisLedgerChecks(redis: () => LedgerRedis): void {
  const ledger = (prefix = `t${prefixes++}:`): RedisQuotaLedger =>
    new RedisQuotaLedger({ adapter: redis().adapter, prefix });

  it('grant what the memory ledger grants, step for step (Lua against TypeScript, random sequences, reports batched)', async () => {
    const step = fc.record({
      client: fc.integer({ min: 0, max: 4 }),
      op: fc.constantFrom('grant', 'grant', 'grant', 'regrant', 'release'),
      demand: fc.integer({ min: 0, max: 2000 }),
      bucket: fc.constantFrom('b', 'b', 'c'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 900 }),
        async (steps, limit) => {
          const memory = new MemoryQuotaLedger();
          const onRedis = ledger();
          const entry = (demand: number | undefined, bucketKey = 'b') => ({
            bucketKey,
            limit,
            demand,
            ttlSeconds: 600,
          });
          // Consecutive grants are asked in one tick, so the Redis ledger sends them as one batch.
          let batch: Array<{ id: string; entries: ReturnType<typeof entry>[] }> = [];
          const flush = async (): Promise<void> => {
            const onRedisGrants = await Promise.all(batch.map((g) => onRedis.grant(g.id, g.entries)));
            // The grants have been "sent": what a call lowered is free for the next call, as in memory.
            await onRedis.settled();
            const inMemory: number[][] = [];
            for (const g of batch) inMemory.push(await memory.grant(g.id, g.entries, 0));
            assert.deepEqual(onRedisGrants, inMemory);
            batch = [];
          };
          for (const s of steps) {
            const id = `c${s.client}`;
            if (s.op === 'grant') {
              const entries = s.bucket === 'b' ? [entry(s.demand)] : [entry(s.demand, 'c'), entry(s.demand / 2)];
              batch.push({ id, entries });
              continue;
            }
            await flush();
            if (s.op === 'release') {
              await memory.release(id, ['b', 'c'], 0);
              await onRedis.release(id, ['b', 'c']);
            } else {
              const ids = ['c0', 'c1', 'c2', 'c3', 'c4'];
              assert.deepEqual(
                await onRedis.regrant(ids, entry(undefined)),
                await memory.regrant(ids, entry(undefined), 0),
              );
              await onRedis.settled();
            }
          }
          await flush();
        },
      ),
      { numRuns: runs(60) },
    );
  });

  it('send the reports asked in one tick as one script call, at most maxReportsPerCall each', async () => {
    const calls: number[] = [];
    const adapter = redis().adapter;
    const counting = {
      ...adapter,
      evalsha: (sha1: string, keys: readonly string[], args: readonly string[]) => {
        // A grant call's reports follow the op and its header (4 arguments); settles are not counted.
        if (args[0] === 'grant') calls.push(args.length - 5);
        return adapter.evalsha(sha1, keys, args);
      },
    };
    const l = new RedisQuotaLedger({ adapter: counting, prefix: `t${prefixes++}:`, maxReportsPerCall: 4 });
    const e = { bucketKey: 'x', limit: 100, demand: 10, ttlSeconds: 60 };
    const grants = await Promise.all(Array.from({ length: 10 }, (_, i) => l.grant(`c${i}`, [e])));
    assert.deepEqual(calls, [4, 4, 2]);
    // In order: the first takes the free 100 less nothing, each next what is left of its target.
    const memory = new MemoryQuotaLedger();
    const expected: number[][] = [];
    for (let i = 0; i < 10; i++) expected.push(await memory.grant(`c${i}`, [e], 0));
    assert.deepEqual(grants, expected);
  });

  it('expire a grant on Redis after its TTL and leave no key of the bucket once every client has gone', async () => {
    const prefix = `t${prefixes++}:`;
    const l = ledger(prefix);
    const e = { bucketKey: 'x', limit: 10, demand: 5, ttlSeconds: 1 };
    assert.deepEqual(await l.grant('a', [e]), [10]);
    assert.deepEqual(await l.grant('b', [e]), [0]);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // Redis's clock, not ours: the TTL must pass for real
    assert.deepEqual(await l.grant('b', [e]), [10]);
    await l.release('b', ['x']);
    // Nothing of the bucket is left. The ledger's sentinel stays, one small hash (one per slot used
    // on a cluster): it must outlive every bucket to tell a Redis that lost its records (#35.3).
    assert.deepEqual(await redis().keys(`${prefix}*`), [
      sentinelKeyOf(`${prefix}rlqs:`, hashSlotOf(bucketKeysOf(`${prefix}rlqs:`, 'x')[0]), redis().adapter.cluster),
    ]);
  });

  it('hold what a replica lowered from the other replicas until it has sent the lower grant (settled)', async () => {
    const prefix = `t${prefixes++}:`;
    const [one, two] = [ledger(prefix), ledger(prefix)];
    const e = (held = 0) => ({ bucketKey: 'y', limit: 100, demand: 100, ttlSeconds: 60, held });
    assert.deepEqual(await one.grant('x', [e()]), [100]);
    assert.deepEqual(await two.grant('y', [e()]), [0]);
    await Promise.all([one.settled(), two.settled()]);
    // x's share falls to 50 on replica one. Before one has had a turn to send it (and settle), two
    // redistributes: the 50 x gives up is not free yet.
    assert.deepEqual(await one.grant('x', [e(100)]), [50]);
    assert.deepEqual(await two.regrant(['y'], e()), [0]);
    await one.settled();
    assert.deepEqual(await two.regrant(['y'], e()), [50]);
  });

  it('after losing its records (FLUSHALL), grow no grant beyond what its client holds for one TTL and a second, then grant again', async () => {
    const prefix = `t${prefixes++}:`;
    const [one, two] = [ledger(prefix), ledger(prefix)];
    const losses: number[] = [];
    one.listen({ changed: () => undefined, lost: () => losses.push(1) });
    const e = (held: number) => ({ bucketKey: 'z', limit: 100, demand: 100, ttlSeconds: 1, held });
    assert.deepEqual(await one.grant('x', [e(0)]), [100]);
    await redis().flushall();
    // y is new (holds nothing), x holds 100 as far as its replica knows: y gets nothing, x keeps at
    // most what it holds (its share, 50, here), and what x gives up stays unused.
    assert.deepEqual(await one.grant('y', [e(0)]), [0]);
    assert.deepEqual(losses, [1]);
    assert.deepEqual(await one.grant('x', [e(100)]), [50]);
    await one.settled();
    assert.deepEqual(await two.grant('y', [e(0)]), [0]);
    await two.settled();
    await new Promise((resolve) => setTimeout(resolve, 2100)); // Redis's clock: one TTL (1 s) and the margin (1 s) must pass for real
    // x's grant ran out meanwhile (it did not report again): y has the whole budget.
    assert.deepEqual(await two.grant('y', [e(0)]), [100]);
  });

  it('share each bucket between two replicas, never over its limit, and free a released share', async () => {
    const prefix = `t${prefixes++}:`;
    const [one, two] = [ledger(prefix), ledger(prefix)];
    const memory = new MemoryQuotaLedger();
    const limits = [300, 400, 500, 600];
    const entries = (demand: number): LedgerEntry[] =>
      BUCKETS.map((bucketKey, i) => ({ bucketKey, limit: limits[i]!, demand, ttlSeconds: 60 }));
    const held = new Map<string, number[]>();
    /** round has a and b report to replica one in one tick, then c to replica two (if present). */
    const round = async (clients: readonly string[]): Promise<void> => {
      const demands: Record<string, number> = { a: 200, b: 100, c: 300 };
      const onOne = clients.filter((c) => c !== 'c');
      const grants = await Promise.all(onOne.map((c) => one.grant(c, entries(demands[c]!))));
      if (clients.includes('c')) grants.push(await two.grant('c', entries(demands.c!)));
      const expected: number[][] = [];
      for (const c of clients) expected.push(await memory.grant(c, entries(demands[c]!), 0));
      assert.deepEqual(grants, expected, `round of ${clients.join(', ')}`);
      clients.forEach((c, i) => held.set(c, grants[i]!));
      limits.forEach((limit, i) => {
        const sum = [...held.values()].reduce((s, g) => s + g[i]!, 0);
        assert.ok(sum <= limit, `grants ${sum} over ${limit} in ${BUCKETS[i]}`);
      });
    };
    for (let i = 0; i < 3; i++) await round(['a', 'b', 'c']);
    // Demand (600) is over every limit but the last: c holds a share the others could use.
    assert.ok(held.get('c')!.every((g) => g > 0));
    await two.release('c', BUCKETS);
    await memory.release('c', BUCKETS, 0);
    held.delete('c');
    for (let i = 0; i < 2; i++) await round(['a', 'b']);
    // Demand (300) fits every limit now: a and b share all of it.
    assert.deepEqual(
      limits.map((_, i) => held.get('a')![i]! + held.get('b')![i]!),
      limits,
    );
  });
}

/**
 * twoServiceReplicas registers the end-to-end check: two `floodgate ratelimit` processes on the
 * Redis `redis()` returns split one bucket between their clients, and a departed client's share
 * reaches the other at its next report.
 */
export function twoServiceReplicas(redis: () => LedgerRedis): void {
  const API = { name: 'api' };
  describe('two floodgate ratelimit replicas sharing one budget', () => {
    const replicas: ServiceProcess[] = [];
    const clients: RlqsClient[] = [];
    before(async () => {
      await redis().flushall();
      // Raw bucket values, so that the test names the bucket's Redis key (hashing is tested in rate-limit-service-hashed-values.test.ts).
      const args = ['--config', fixturePath('rlqs-shared.yaml'), '--raw-values', ...redis().flags];
      replicas.push(...(await Promise.all([startServiceProcess(args), startServiceProcess(args)])));
    });
    after(async () => {
      for (const c of clients) c.close();
      await Promise.all(replicas.map((r) => r.stop()));
    });

    it('split 300 between clients on different replicas, and give a departed client share to the other at its next report', async () => {
      const a = new RlqsClient(replicas[0]!.grpcPort);
      const b = new RlqsClient(replicas[1]!.grpcPort);
      clients.push(a, b);
      const rounds = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) {
          const before = [a.received.length, b.received.length];
          a.report('edge', [API], 200);
          b.report('edge', [API], 200);
          await a.until(() => a.received.length > before[0]! && b.received.length > before[1]!, 'a round answered');
          const sum = (grantOf(a.latestOf(API)) ?? 0) + (grantOf(b.latestOf(API)) ?? 0);
          assert.ok(sum <= 300, `grants ${sum} over the shared 300`);
        }
      };
      await rounds(3);
      assert.deepEqual([grantOf(a.latestOf(API)), grantOf(b.latestOf(API))], [150, 150]);
      b.close();
      // Replica 2 releases b's share in Redis once it sees the stream end.
      const [key] = bucketKeysOf('floodgate:rlqs:', bucketKeyOf('edge', API));
      for (let waited = 0; (await redis().hget(key, 'n')) !== '1'; waited += 20) {
        assert.ok(waited < 5000, 'replica 2 did not release the departed client');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const before = a.received.length;
      a.report('edge', [API], 200);
      await a.until(() => a.received.length > before, 'an answer');
      assert.equal(grantOf(a.latestOf(API)), 300);
    });
  });
}
