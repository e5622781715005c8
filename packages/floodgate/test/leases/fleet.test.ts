import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fixedWindow, gcra, tokenBucket } from '../../src/index.js';
import { START_MS, drive, makeFleet, overBucket, perWindow, settle } from './fleet.js';
import { runs } from '../support/sweep.js';

// Leasing nodes on one shared key, on a manual clock with a 1 ms one-way delay to the shared state.

describe('leases on a fleet (manual clock)', () => {
  test('steady load, 3 nodes: every request admitted at once, about 1 call per 60 requests, within the bound', async () => {
    const policy = tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 });
    const fleet = makeFleet(policy, 3);
    const out = await drive(fleet, 'k', [2, 2, 2], 3000);
    assert.equal(out.length, 18_000);
    assert.ok(
      out.every((a) => a.decision.allowed),
      'below the rate, everything is admitted',
    );
    // Asks and returns, and the per-request decisions of requests that waited for an ask at the start.
    const calls =
      fleet.links.reduce((sum, l) => sum + l.calls, 0) + fleet.tables.reduce((sum, t) => sum + t.counts.direct, 0);
    assert.ok(calls / out.length <= 0.05, `${calls} calls for ${out.length} requests`);
    const late = out.filter((a) => a.sentAtMs >= START_MS + 1000 && a.atMs > a.sentAtMs);
    assert.equal(late.length, 0, 'in steady state no request waits for a renewal');
    assert.ok(overBucket(out, policy.limit, 10) <= fleet.terms.maxOutstanding);
  });

  test('skewed contention, 3 nodes: admitted shares follow demand, the bucket is held to its promise plus maxOutstanding', async () => {
    const policy = tokenBucket({ capacity: 5000, refillPerSecond: 5000 });
    const fleet = makeFleet(policy, 3);
    const demand = [8, 2, 2];
    const out = await drive(fleet, 'k', demand, 5000);
    const over = overBucket(out, policy.limit, 5);
    assert.ok(over <= fleet.terms.maxOutstanding, `over the promise by ${over}, bound ${fleet.terms.maxOutstanding}`);
    const steady = out.filter((a) => a.atMs >= fleet.clock.now() - 3500 && a.decision.allowed);
    const total = steady.length;
    assert.ok(total > 0.95 * 5 * 3000, `the rate is used: ${total} admitted`);
    for (const [node, d] of demand.entries()) {
      const share = steady.filter((a) => a.node === node).length / total;
      const fair = d / 12;
      assert.ok(
        Math.abs(share / fair - 1) <= 0.05,
        `node ${node}: share ${share.toFixed(4)} against ${fair.toFixed(4)}`,
      );
    }
    const refusedEarly = out.filter((a) => !a.decision.allowed && a.decision.reason === 'limit');
    assert.ok(refusedEarly.every((a) => a.decision.retryAfterMs >= 1));
  });

  test('fixed window: no window admits more than its limit, leases or not', async () => {
    const policy = fixedWindow({ limit: 3000, windowMs: 1000 });
    const fleet = makeFleet(policy, 3, { maxOutstandingShare: 0.05, leaseMs: 2000 });
    const out = await drive(fleet, 'k', [6, 3, 3], 4500);
    const windows = perWindow(out, 1000);
    for (const [w, count] of windows) assert.ok(count <= 3000, `window ${w} admitted ${count}`);
    const full = [...windows.values()].filter((c) => c >= 2900).length;
    assert.ok(full >= 3, `the limit is used: ${[...windows.values()].join(', ')}`);
  });

  test('gcra: held to its promise plus maxOutstanding under contention', async () => {
    const policy = gcra({ rate: 4000, periodMs: 1000, maxBurst: 3999 });
    const fleet = makeFleet(policy, 2);
    const out = await drive(fleet, 'k', [5, 3], 3000);
    assert.ok(overBucket(out, policy.limit, 4) <= fleet.terms.maxOutstanding);
  });

  test('a node that dies holds its lease until it ends; then its share goes to the others', async () => {
    const policy = tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 });
    const fleet = makeFleet(policy, 2, { leaseMs: 500 });
    await drive(fleet, 'k', [3, 3], 300);
    const state = fleet.source.stateOf('k');
    assert.equal(state.holders.size, 2);
    const deadHeld = state.holders.get('node-1')!.held;
    assert.ok(deadHeld > 0, 'the dying node holds units');
    fleet.links[1]!.dead = true; // nothing it sends arrives any more
    const live = fleet.links[0]!.answers;
    live.length = 0;
    await drive(fleet, 'k', [3, 0], 100);
    const whileDead = Math.max(...live.map((a) => a.granted));
    assert.ok(
      whileDead <= fleet.terms.maxOutstanding - deadHeld,
      `the dead lease still counts: grants up to ${whileDead}`,
    );
    await drive(fleet, 'k', [3, 0], 600);
    assert.deepEqual([...fleet.source.stateOf('k').holders.keys()], ['node-0'], 'its record ended with its lease');
    live.length = 0;
    const out = await drive(fleet, 'k', [3, 0], 300);
    assert.ok(out.every((a) => a.decision.allowed));
    const afterDeath = Math.max(...live.map((a) => a.granted));
    assert.ok(
      afterDeath > fleet.terms.maxOutstanding - deadHeld,
      `grants up to ${afterDeath} once its share came back`,
    );
  });

  test('units not spent are given back: before their lease ends, and on close', async () => {
    const policy = tokenBucket({ capacity: 10_000, refillPerSecond: 1 });
    const fleet = makeFleet(policy, 1, { leaseMs: 1000 });
    await drive(fleet, 'k', [5], 100);
    const held = fleet.tables[0]!.held('k');
    assert.ok(held > 0);
    const remaining = (): number => policy.peek(fleet.source.stateOf('k').cells, 0, fleet.clock.now(), 0).remaining;
    const before = remaining();
    const closed = fleet.tables[0]!.close();
    for (let i = 0; i < 5; i++) {
      fleet.clock.advance(1);
      await settle();
    }
    await closed;
    assert.equal(remaining(), before + held, 'close gave back every unit held');
    assert.equal(fleet.source.stateOf('k').holders.size, 0, 'and ended its record');
    await assert.rejects(async () => fleet.tables[0]!.consume('k', 1, Number.NaN), { code: 'LIMITER_CLOSED' });

    const idle = makeFleet(policy, 1, { leaseMs: 1000 });
    await drive(idle, 'k', [5], 100);
    const idleHeld = idle.tables[0]!.held('k');
    const idleBefore = policy.peek(idle.source.stateOf('k').cells, 0, idle.clock.now(), 0).remaining;
    for (let i = 0; i < 1000; i++) {
      idle.clock.advance(1);
      await settle();
    }
    assert.equal(idle.tables[0]!.held('k'), 0);
    const idleAfter = policy.peek(idle.source.stateOf('k').cells, 0, idle.clock.now(), 0).remaining;
    assert.ok(idleAfter >= idleBefore + idleHeld, 'an idle node gave its units back before they ended');
  });

  test('the shared state away: units held are still spent; the rest goes to the store failure policy; nothing hangs', async () => {
    const policy = tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 });
    const fleet = makeFleet(policy, 1);
    await drive(fleet, 'k', [3], 200);
    const held = fleet.tables[0]!.held('k');
    fleet.source.down = true;
    const out = await drive(fleet, 'k', [3], 200);
    assert.equal(out.length, 600, 'every request was answered');
    const fromLease = out.filter((a) => a.decision.reason === 'ok').length;
    assert.ok(fromLease >= held - 1 && fromLease <= held + 1, `${fromLease} from the lease of ${held}`);
    assert.ok(out.filter((a) => a.decision.reason === 'fail-open').length >= 600 - held - 1);
    fleet.source.down = false;
    const backAtMs = fleet.clock.now();
    const back = await drive(fleet, 'k', [3], 300);
    // A failed ask sends the key's requests to the store's per-request table for ASK_RETRY_MS (100 ms).
    const later = back.filter((a) => a.sentAtMs >= backAtMs + 110);
    assert.ok(later.length > 0 && later.every((a) => a.decision.reason === 'ok'), 'leases again once it is back');
    assert.ok(fleet.tables[0]!.counts.asks < 300, 'while away, about one ask per 100 ms, not one per request');
  });
});

describe('leases on a fleet: the bound on random fleets (fast-check)', () => {
  test('any demand, any share: admitted never above the bucket promise plus maxOutstanding', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ min: 0, max: 6, noNaN: true }), { minLength: 1, maxLength: 4 }),
        fc.constantFrom(0.005, 0.02, 0.1),
        fc.integer({ min: 0, max: 5000 }),
        async (perMs, share, drainUnits) => {
          const policy = tokenBucket({ capacity: 5000, refillPerSecond: 5000 });
          const fleet = makeFleet(policy, perMs.length, { maxOutstandingShare: share });
          policy.consume(fleet.source.stateOf('k').cells, 0, fleet.clock.now(), drainUnits);
          const out = await drive(fleet, 'k', perMs, 600);
          // The bucket's promise over any span: its capacity plus its rate over the span.
          const over = overBucket(out, 5000, 5);
          assert.ok(over <= fleet.terms.maxOutstanding, `over by ${over}, bound ${fleet.terms.maxOutstanding}`);
        },
      ),
      { numRuns: runs(12) },
    );
  });
});
