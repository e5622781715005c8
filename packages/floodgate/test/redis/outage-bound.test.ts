import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { ManualClock, tokenBucket, type Decision } from '../../src/index.js';
import { RedisStore, ioredisAdapter } from '../../src/stores/redis/index.js';
import type { RedisTable } from '../../src/stores/redis/redis-table.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';

// Three processes (three stores, each with its own client and clock) on one key of one real Redis,
// at their defaults. While Redis is hung (SIGSTOP) each admits at most its share, one third, as
// counted by the census; once it is back, every admission is counted on Redis exactly once: the
// calls that were cut off but ran late are not charged again, and those never sent are written back.

const CAPACITY = 150;
// 150 tokens an hour: the refill during the test stays far below one token.
const policy = tokenBucket({ capacity: CAPACITY, refillPerSecond: CAPACITY / 3600 });

let servers: RedisServers;
const clients: Redis[] = [];

before(async () => {
  servers = await startRedisServer();
});

after(async () => {
  for (const client of clients) client.disconnect();
  await servers.stop();
});

interface Node {
  readonly clock: ManualClock;
  readonly table: RedisTable;
}

function node(): Node {
  const client = new Redis({ host: '127.0.0.1', port: servers.ports[0]!, retryStrategy: () => 20 });
  client.on('error', () => {});
  clients.push(client);
  const clock = new ManualClock();
  // The defaults but one: a circuit that opens at the first failure, so that the outage's second
  // round is decided without sending anything.
  const store = new RedisStore({ adapter: ioredisAdapter(client), failuresToOpen: 1, clock, timers: clock });
  return { clock, table: store.bind(policy) };
}

function admitted(decisions: readonly Decision[]): number {
  return decisions.filter((d) => d.allowed).length;
}

describe('an outage of Redis under three processes, at the defaults', () => {
  test('each admits at most its share; afterwards the key has been charged every admission once', async () => {
    const nodes = [node(), node(), node()];
    // Rounds of census beats, one interval apart, until every store has counted the three. A beat
    // rides on an answer; the second call of a round is answered after it (one connection, in
    // order), so no beat is still out when the clock moves on.
    for (let round = 0; round < 3; round++) {
      for (const n of nodes)
        for (let i = 0; i < 2; i++) assert.equal((await n.table.consume('warm', 1, NaN)).reason, 'ok');
      for (const n of nodes) n.clock.advance(5000);
    }
    for (const n of nodes) for (let i = 0; i < 2; i++) assert.equal((await n.table.consume('k', 1, NaN)).reason, 'ok');

    servers.signal(0, 'SIGSTOP');
    let sentAndCut: Decision[][];
    let neverSent: Decision[][];
    let beyondShare: Decision[][];
    try {
      // Round 1: sent, then cut off at the timeout (the floor: answers so far took 0 ms on these clocks).
      const pending = nodes.map((n) => Array.from({ length: 20 }, () => n.table.consume('k', 1, NaN)));
      await new Promise((resolve) => setImmediate(resolve)); // the batches are sent
      for (const n of nodes) n.clock.advance(25);
      sentAndCut = await Promise.all(pending.map((p) => Promise.all(p)));
      // Round 2: the circuits are open: decided locally, nothing sent. On 'b', more than a share.
      neverSent = await Promise.all(
        nodes.map((n) => Promise.all(Array.from({ length: 20 }, () => n.table.consume('k', 1, NaN)))),
      );
      beyondShare = await Promise.all(
        nodes.map((n) => Promise.all(Array.from({ length: 80 }, () => n.table.consume('b', 1, NaN)))),
      );
    } finally {
      servers.signal(0, 'SIGCONT');
    }
    const share = CAPACITY / 3;
    for (let i = 0; i < 3; i++) {
      const local = [...sentAndCut[i]!, ...neverSent[i]!, ...beyondShare[i]!];
      assert.ok(
        local.every((d) => d.reason === 'fallback'),
        `node ${i}: ${local.map((d) => d.reason).join(',')}`,
      );
      assert.equal(admitted([...sentAndCut[i]!, ...neverSent[i]!]), 40, `node ${i}: within its share, all admitted`);
      assert.equal(
        admitted(beyondShare[i]!),
        share,
        `node ${i} admits its share of 'b', a third of the limit, and no more`,
      );
    }
    // Redis is back: the hung batches run (and their late answers cancel what they charged); the
    // probe is answered, and each store writes back the admissions it never sent.
    for (const n of nodes) n.clock.advance(250);
    const probes = await Promise.all(nodes.map((n) => n.table.consume('probe', 1, NaN)));
    assert.deepEqual(
      probes.map((d) => d.reason),
      ['ok', 'ok', 'ok'],
    );
    for (
      let tries = 0;
      tries < 200 && nodes.some((n) => (n.table.writeBack?.size ?? 0) > 0 || n.table.writeBack?.busy === true);
      tries++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const left = await nodes[0]!.table.peek('k', 0, NaN);
    assert.equal(left.reason, 'ok');
    assert.equal(left.remaining, CAPACITY - 3 * (2 + 40), 'the key tells the truth: every admission charged once');
    assert.equal(
      (await nodes[1]!.table.peek('b', 0, NaN)).remaining,
      0,
      'the fleet admitted the whole limit of b, and Redis knows it',
    );
  });
});
