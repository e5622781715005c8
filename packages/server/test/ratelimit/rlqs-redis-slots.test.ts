import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSlotOf, type RedisAdapter } from 'floodgate/redis';
import { bucketKeysOf } from '../../src/ratelimit/quota/redis-calls.js';
import { RedisQuotaLedger } from '../../src/ratelimit/quota/redis-ledger.js';
import { QUOTA_SCRIPT } from '../../src/ratelimit/quota/redis-script.js';

const PREFIX = 'p:rlqs:';
/** slotOf returns the hash slot of bucket `bucket`'s keys. */
const slotOf = (bucket: string): number => hashSlotOf(bucketKeysOf(PREFIX, bucket)[0]);

/** ScriptCall is one script call a {@link FakeRedis} received: its bucket keys (after the sentinel) and its op with the op's arguments (after the header). */
interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/**
 * FakeRedis is an adapter that records its calls and answers as a cluster would route them: a
 * call whose keys span slots (its sentinel among them) fails with CROSSSLOT (on a cluster), a call
 * to `failSlot` fails, and otherwise each grant is `100 * report + bucket` (report `c<r>`, bucket
 * `b<j>`, read from the key the entry names), so a test can tell whose grant for which bucket
 * landed where. It answers as the script does: an epoch, whether a grant was lowered, the grants.
 */
class FakeRedis implements RedisAdapter {
  readonly calls: ScriptCall[] = [];
  constructor(
    readonly cluster: boolean,
    private readonly failSlot?: number,
  ) {}

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    assert.equal(sha1, QUOTA_SCRIPT.sha1);
    const [sentinel, ...bucketKeys] = keys;
    assert.match(sentinel!, /^p:rlqs:(\{\d+\}:)?epoch$/);
    // The header: op, epoch known, recovery ms, token, channel.
    assert.equal(args.length >= 5, true);
    this.calls.push({ keys: bucketKeys, args: [args[0]!, ...args.slice(5)] });
    const slots = new Set(keys.map(hashSlotOf));
    if (this.cluster && slots.size > 1)
      return Promise.reject(new Error("CROSSSLOT Keys in request don't hash to the same slot"));
    if (slots.has(this.failSlot ?? -1)) return Promise.reject(new Error('CLUSTERDOWN The cluster is down'));
    if (args[0] !== 'grant') return Promise.resolve(['1.0', 0]);
    return Promise.resolve(['1.0', 0, ...args.slice(5).flatMap((report) => grantsOf(report, bucketKeys))]);
  }

  eval(): Promise<unknown> {
    return Promise.reject(new Error('eval is not expected: the fake knows the script'));
  }
}

/** grantsOf answers one report's argument (`c<r> k limit demand ttlMs held ...`) as {@link FakeRedis} does. */
function grantsOf(report: string, keys: readonly string[]): number[] {
  const [client, ...fields] = report.split(' ');
  const grants: number[] = [];
  for (let at = 0; at < fields.length; at += 5) {
    const k = Number(fields[at]);
    const [hash, expiry] = [keys[2 * k - 2]!, keys[2 * k - 1]!];
    assert.equal(expiry, `${hash}:expiry`, 'a bucket is its hash, then its expiry set');
    const bucket = /\{b:b(\d+)\}$/.exec(hash)![1]!;
    grants.push(100 * Number(client!.slice(1)) + Number(bucket));
  }
  return grants;
}

const entry = (bucket: number) => ({ bucketKey: `b${bucket}`, limit: 1000, demand: 10, ttlSeconds: 60 });

/** The batch under test: report `c<r>` asks for the buckets at index r, in that order. */
const REPORTS = [[0, 1, 2], [2, 0], [3], [1, 4, 0, 5], [5]];

/** ask sends {@link REPORTS} in one tick and settles them all. */
function ask(ledger: RedisQuotaLedger): Promise<Array<PromiseSettledResult<number[]>>> {
  return Promise.allSettled(REPORTS.map((buckets, r) => ledger.grant(`c${r}`, buckets.map(entry))));
}

const expected = (r: number): number[] => REPORTS[r]!.map((j) => 100 * r + j);

describe('the RLQS Redis ledger, split by hash slot', () => {
  const slots = [0, 1, 2, 3, 4, 5].map((j) => slotOf(`b${j}`));

  it('has buckets of the batch under test in several slots, and keys of one bucket in one slot', () => {
    assert.ok(new Set(slots).size >= 4, `slots ${slots.join(', ')}`);
    for (const bucket of ['b0', 'x}y', '}x', '}', 'a{b}c', '{', 'x{}', 'edge\0name\0api'])
      assert.equal(new Set(bucketKeysOf(PREFIX, bucket).map(hashSlotOf)).size, 1, bucket);
    assert.deepEqual(bucketKeysOf(PREFIX, 'b0'), ['p:rlqs:{b:b0}', 'p:rlqs:{b:b0}:expiry']);
  });

  it('on a cluster, make one call per slot, each within its slot, and put each report back in order', async () => {
    const redis = new FakeRedis(true);
    const settled = await ask(new RedisQuotaLedger({ adapter: redis, prefix: 'p:' }));
    assert.deepEqual(
      settled,
      REPORTS.map((_, r) => ({ status: 'fulfilled', value: expected(r) })),
    );
    assert.equal(redis.calls.length, new Set(slots).size);
    for (const call of redis.calls) {
      assert.equal(new Set(call.keys.map(hashSlotOf)).size, 1, `keys ${call.keys.join(', ')} in one slot`);
      // Reports keep their order within a call, so reports sharing a bucket are granted as asked.
      const clients = call.args.slice(1).map((a) => Number(a.split(' ')[0]!.slice(1)));
      assert.deepEqual(
        clients,
        [...clients].sort((a, b) => a - b),
      );
    }
    // Every entry of every report went in exactly one call (5 fields each after the client).
    const sent = redis.calls.flatMap((c) => c.args.slice(1).map((a) => (a.split(' ').length - 1) / 5));
    assert.equal(
      sent.reduce((a, b) => a + b, 0),
      REPORTS.flat().length,
    );
  });

  it('on a single Redis, make one call for the whole batch, as before', async () => {
    const redis = new FakeRedis(false);
    const settled = await ask(new RedisQuotaLedger({ adapter: redis, prefix: 'p:' }));
    assert.deepEqual(
      settled,
      REPORTS.map((_, r) => ({ status: 'fulfilled', value: expected(r) })),
    );
    assert.equal(redis.calls.length, 1);
    assert.deepEqual(redis.calls[0]!.args.length, 1 + REPORTS.length);
  });

  it('on a cluster, reject exactly the reports with an entry in a failed call', async () => {
    const failed = slots[0]!;
    const redis = new FakeRedis(true, failed);
    const settled = await ask(new RedisQuotaLedger({ adapter: redis, prefix: 'p:' }));
    REPORTS.forEach((buckets, r) => {
      const hit = buckets.some((j) => slots[j] === failed);
      const s = settled[r]!;
      if (hit) assert.match(s.status === 'rejected' ? String(s.reason) : 'fulfilled', /CLUSTERDOWN/, `report ${r}`);
      else assert.deepEqual(s, { status: 'fulfilled', value: expected(r) }, `report ${r}`);
    });
    // The batch has both kinds, so the test tells them apart.
    assert.ok(REPORTS.some((b) => b.every((j) => slots[j] !== failed)));
    assert.ok(REPORTS.filter((b) => b.some((j) => slots[j] === failed)).length >= 2);
  });

  it('on a cluster, fail a report and nothing else when the script answers the wrong number of grants', async () => {
    const redis = new FakeRedis(true);
    const short: RedisAdapter = {
      cluster: true,
      eval: () => redis.eval(),
      evalsha: async (sha1, keys, args) => {
        const reply = (await redis.evalsha(sha1, keys, args)) as unknown[];
        // One grant short: the epoch, the flag, then all grants but the first.
        return keys.includes(bucketKeysOf(PREFIX, 'b3')[0]) ? [...reply.slice(0, 2), ...reply.slice(3)] : reply;
      },
    };
    const settled = await ask(new RedisQuotaLedger({ adapter: short, prefix: 'p:' }));
    REPORTS.forEach((buckets, r) => {
      const hit = buckets.some((j) => slots[j] === slots[3]);
      assert.equal(settled[r]!.status, hit ? 'rejected' : 'fulfilled', `report ${r}`);
    });
  });

  it('release on a cluster with one call per slot, and on a single Redis with one call', async () => {
    const buckets = ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'];
    const cluster = new FakeRedis(true);
    await new RedisQuotaLedger({ adapter: cluster, prefix: 'p:' }).release('c0', buckets);
    assert.equal(cluster.calls.length, new Set(slots).size);
    for (const call of cluster.calls) {
      assert.deepEqual(call.args, ['release', 'c0']);
      assert.equal(new Set(call.keys.map(hashSlotOf)).size, 1);
    }
    assert.deepEqual(
      cluster.calls.flatMap((c) => c.keys).sort(),
      buckets.flatMap((b) => bucketKeysOf(PREFIX, b)).sort(),
    );
    const single = new FakeRedis(false);
    await new RedisQuotaLedger({ adapter: single, prefix: 'p:' }).release('c0', buckets);
    assert.deepEqual(single.calls, [
      { keys: buckets.flatMap((b) => bucketKeysOf(PREFIX, b)), args: ['release', 'c0'] },
    ]);
  });

  it('reject a release on a cluster when one of its slots fails', async () => {
    const redis = new FakeRedis(true, slots[2]);
    await assert.rejects(
      new RedisQuotaLedger({ adapter: redis, prefix: 'p:' }).release('c0', ['b0', 'b1', 'b2']),
      /CLUSTERDOWN/,
    );
  });
});
