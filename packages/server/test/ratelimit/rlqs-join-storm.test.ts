import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { ioredisAdapter } from 'floodgate/redis';
import { useRedis } from '../../../floodgate/test/redis/setup.js';
import { MemoryQuotaLedger, type QuotaLedger } from '../../src/ratelimit/quota/ledger.js';
import { RedisQuotaLedger } from '../../src/ratelimit/quota/redis-ledger.js';
import { domainsOf } from './support.js';
import { grantOf, RlqsClient, startQuotaServer, type QuotaServer } from './rlqs-support.js';

// One bucket of 1000 requests a second; every client asks 10, so each gets 10 and an equal part of
// the rest: 50 of 20 clients, 47 of 21 (6% less), 19 of 51. `sync` is a bucket no rule matches, reported to
// know that every push written before its answer has arrived (a stream's messages keep their order).
const CONFIG = `
domain: edge
quota:
  buckets:
    - bucket: { name: api }
      requests_per_unit: 1000
      unit: second
      strategy: requests_per_time_unit
      assignment_ttl_seconds: 60
`;
const API = { name: 'api' };
const SYNC = { name: 'sync' };
const LIMIT = 1000;

/** apiActions returns how many actions for `api` a client has received: its answers and the pushes. */
const apiActions = (c: RlqsClient): number => c.received.filter((a) => a.bucket_id.bucket.name === 'api').length;

function joinStorm(ledgerOf: () => QuotaLedger): void {
  let server: QuotaServer;
  const clock = new ManualClock(1_000_000);
  const clients: RlqsClient[] = [];
  const grants = (cs: readonly RlqsClient[]): number[] => cs.map((c) => grantOf(c.latestOf(API)) ?? -1);
  const sum = (): number => grants(clients).reduce((a, b) => a + b, 0);

  /** report has `cs` report `api` at once and resolves when each has its answer. */
  const report = async (cs: readonly RlqsClient[]): Promise<void> => {
    const before = cs.map(apiActions);
    for (const c of cs) c.report('edge', [API], 10);
    await Promise.all(cs.map((c, i) => c.until(() => apiActions(c) > before[i]!, 'an answer for api')));
  };
  /** pass runs the redistribution the joins scheduled, and resolves once every client has what it pushed. */
  const pass = async (): Promise<void> => {
    clock.advance(100);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the ledger's answer (a Redis round trip), then the writes
    const before = clients.map((c) => c.received.length);
    for (const c of clients) c.report('edge', [SYNC], 1);
    await Promise.all(
      clients.map((c, i) =>
        c.until(() => c.received.slice(before[i]).some((a) => a.bucket_id.bucket.name === 'sync'), 'the sync answer'),
      ),
    );
  };
  const join = (n: number): RlqsClient[] => {
    const cs = Array.from({ length: n }, () => new RlqsClient(server.port));
    clients.push(...cs);
    return cs;
  };

  before(async () => {
    server = await startQuotaServer({ domains: domainsOf(CONFIG), ledger: ledgerOf(), clock, timers: clock });
  });
  after(async () => {
    for (const c of clients) c.close();
    await server.close();
  });

  it('settle 20 clients at their shares of 50', async () => {
    for (const c of join(20)) await report([c]);
    await pass();
    await report(clients);
    await report(clients);
    assert.deepEqual(grants(clients), Array(20).fill(50));
  });

  it('push nothing to the 20 when one joins (their shares move by under a tenth); it gets its share as the others report', async () => {
    const old = [...clients];
    const seen = old.map(apiActions);
    const newcomers = join(1);
    await report(newcomers);
    // The 20 hold all 1000: a newcomer starts with what is free.
    assert.deepEqual(grants(newcomers), [0]);
    await pass();
    assert.deepEqual(
      old.map((c, i) => apiActions(c) - seen[i]!),
      Array(20).fill(0),
      'a push reached one of the 20',
    );
    assert.ok(sum() <= LIMIT, `grants sum to ${sum()}`);
    await report(old);
    await report(newcomers);
    assert.deepEqual(grants(clients), Array(21).fill(47));
  });

  it('push once to each of the 21 when 30 join at once (a share cut by more than half), and give the 30 theirs in the same pass', async () => {
    const old = [...clients];
    const seen = old.map(apiActions);
    const newcomers = join(30);
    await report(newcomers);
    assert.ok(sum() <= LIMIT, `grants sum to ${sum()} on joining`);
    await pass();
    // The 21 sent no report of api since `seen`: what they received are pushes.
    assert.deepEqual(
      old.map((c, i) => apiActions(c) - seen[i]!),
      Array(21).fill(1),
    );
    assert.ok(sum() <= LIMIT, `grants sum to ${sum()} after the pass`);
    assert.deepEqual(grants(clients), Array(51).fill(19));
  });
}

describe('RLQS join storms, with grpc-js clients (memory ledger)', () => joinStorm(() => new MemoryQuotaLedger()));

describe('RLQS join storms, with grpc-js clients (Redis ledger)', () => {
  const redis = useRedis();
  joinStorm(() => new RedisQuotaLedger({ adapter: ioredisAdapter(redis().client) }));
});
