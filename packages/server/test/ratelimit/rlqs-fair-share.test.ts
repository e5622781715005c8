import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  demandOf,
  expiresAtMs,
  grantOf,
  idleTooLong,
  overReported,
  targetOf,
  waterLevelOf,
} from '../../src/ratelimit/quota/fair-share.js';
import { burstOf } from '../../src/ratelimit/quota/actions.js';
import type { QuotaRule } from '../../src/ratelimit/quota/spec.js';
import { MemoryQuotaLedger, type LedgerEntry } from '../../src/ratelimit/quota/ledger.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

const entry = (demand: number | undefined, limit = 300, ttlSeconds = 10): LedgerEntry => ({
  bucketKey: 'b',
  limit,
  demand,
  ttlSeconds,
});

describe('fair share (pure)', () => {
  it('give each client its demand and an equal part of the rest while demand is under the limit', () => {
    assert.equal(targetOf(50, { clients: 2, demand: 100, level: Infinity }, 300), 150);
    assert.equal(targetOf(0, { clients: 3, demand: 0, level: Infinity }, 300), 100);
  });

  it('share max-min fairly with a floor over the limit: targets sum to the limit, nobody at 0', () => {
    const demands = [900, 100, 0];
    const totals = { clients: 3, demand: 1000, level: waterLevelOf(demands, 300) };
    const targets = demands.map((d) => targetOf(d, totals, 300));
    assert.ok(Math.abs(targets.reduce((a, b) => a + b, 0) - 300) < 1e-9);
    assert.ok(targets[0]! > targets[1]! && targets[1]! > targets[2]! && targets[2]! > 0, targets.join(','));
    // The floor is 300 / 10 / 3 = 10; 100 is under the level, which the 900 caps at 300 - 110.
    assert.deepEqual(targets, [190, 100, 10]);
  });

  it('find the water level: the demands, raised to the floor, capped at it, sum to the limit', () => {
    const rows: Array<[demands: number[], limit: number, level: number]> = [
      [[], 300, Infinity],
      [[100, 100], 300, Infinity], // under the limit: no cap
      [[900, 100, 0], 300, 190], // 10 (the floor) + 100 + 190
      [[400, 100, 100], 300, 100],
      [[1000, 1000], 100, 50],
      [[500, 5], 100, 95],
      [[7, 7], 0, 0],
    ];
    for (const [demands, limit, level] of rows)
      assert.equal(waterLevelOf(demands, limit), level, `${demands} of ${limit}`);
  });

  it('never give a client less than min(its demand, limit / n) over the limit, whatever the others report (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e4, noNaN: true }),
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 10_000 }),
        (mine, others, limit) => {
          const demands = [mine, ...others];
          const demand = demands.reduce((a, b) => a + b, 0);
          const totals = { clients: demands.length, demand, level: () => waterLevelOf(demands, limit) };
          const targets = demands.map((d) => targetOf(d, totals, limit));
          const floor = Math.min(mine, limit / demands.length);
          assert.ok(targets[0]! >= floor - 1e-9 * limit, `${targets[0]} under ${floor}`);
          const sum = targets.reduce((a, b) => a + b, 0);
          assert.ok(Math.abs(sum - limit) <= 1e-9 * limit * demands.length, `targets sum to ${sum}, not ${limit}`);
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('call a report an over-report only past what its assignments could have allowed, with a tenth and 2 requests to spare', () => {
    const second = { elapsedMs: 1000, periodSeconds: 1 };
    const rows: Array<
      [
        allowed: number,
        allowance: { granted: number; burstTokens: number } | undefined,
        time: typeof second,
        over: boolean,
      ]
    > = [
      [1e6, undefined, second, false], // no assignment: the client applied its own fallback
      [112, { granted: 50, burstTokens: 50 }, second, false], // at most 100, 112 with the tolerance
      [113, { granted: 50, burstTokens: 50 }, second, true],
      [113, { granted: 50, burstTokens: 50 }, { elapsedMs: 0, periodSeconds: 1 }, true], // 0 s counts as 1
      [222, { granted: 50, burstTokens: 50 }, { elapsedMs: 3000, periodSeconds: 1 }, false], // 200 in 3 s
      [2, { granted: 0, burstTokens: 0 }, second, false], // DENY_ALL
      [3, { granted: 0, burstTokens: 0 }, second, true],
      [69, { granted: 60, burstTokens: 60 }, { elapsedMs: 1000, periodSeconds: 60 }, false], // 1 s of a 60 s period: 61
      [70, { granted: 60, burstTokens: 60 }, { elapsedMs: 1000, periodSeconds: 60 }, true],
    ];
    for (const [allowed, allowance, time, over] of rows)
      assert.equal(overReported(allowed, allowance, time), over, `${allowed} under ${JSON.stringify(allowance)}`);
  });

  it('count an assignment burst as its token bucket max_tokens, or a time unit of requests_per_time_unit', () => {
    const rule = { limit: 100, maxTokens: 200, strategy: 'token_bucket' } as QuotaRule;
    assert.equal(burstOf(rule, 50), 100);
    assert.equal(burstOf(rule, 0), 0);
    assert.equal(burstOf({ ...rule, maxTokens: 1 }, 1), 1);
    assert.equal(burstOf({ ...rule, strategy: 'requests_per_time_unit' }, 30), 30);
  });

  it('grant at most what the others leave free, rounded down, never negative', () => {
    assert.equal(grantOf(150.7, 0, { clients: 2, demand: 0, granted: 300 }, 300), 0);
    assert.equal(grantOf(150.7, 100, { clients: 2, demand: 0, granted: 250 }, 300), 150);
    assert.equal(grantOf(2.9999999999999996, 0, { clients: 1, demand: 0, granted: 0 }, 300), 3);
  });

  it('read demand per period from a report, an elapsed time under a second as one second, averaged with the last', () => {
    assert.equal(demandOf(undefined, { requests: 30, elapsedMs: 0 }, 60), 1800);
    assert.equal(demandOf(undefined, { requests: 30, elapsedMs: 2000 }, 1), 15);
    assert.equal(demandOf(10, { requests: 30, elapsedMs: 1000 }, 1), 20);
  });

  it('time TTLs and idleness from the times given', () => {
    assert.equal(expiresAtMs(1000, 30), 31_000);
    assert.equal(idleTooLong(0, 29_999, 30), false);
    assert.equal(idleTooLong(0, 30_000, 30), true);
    assert.equal(idleTooLong(0, 1e12, undefined), false);
  });
});

describe('the memory ledger on a manual clock', () => {
  it('hold a grant until its TTL runs out, then give it to the others', async () => {
    const ledger = new MemoryQuotaLedger();
    assert.deepEqual(await ledger.grant('a', [entry(200)], 0), [300]);
    // b arrives while a holds everything: nothing is free until a shrinks or its grant expires.
    assert.deepEqual(await ledger.grant('b', [entry(200)], 1000), [0]);
    assert.deepEqual(await ledger.grant('b', [entry(200)], 9000), [0]);
    // a's grant (given at 0 for 10 s) has expired at 10 s: b has the whole budget.
    assert.deepEqual(await ledger.grant('b', [entry(200)], 10_000), [300]);
    assert.deepEqual(ledger.size(), { buckets: 1, holders: 1 });
  });

  it('regrant shrinking clients first, so what they free reaches the others', async () => {
    const ledger = new MemoryQuotaLedger();
    await ledger.grant('a', [entry(100)], 0);
    await ledger.grant('b', [entry(100)], 0);
    assert.deepEqual(await ledger.regrant(['b', 'a', 'gone'], entry(undefined), 0), [150, 150, undefined]);
    await ledger.release('a', ['b'], 0);
    assert.deepEqual(await ledger.regrant(['b'], entry(undefined), 0), [300]);
    await ledger.release('b', ['b'], 0);
    assert.deepEqual(ledger.size(), { buckets: 0, holders: 0 });
  });

  it('never let outstanding grants sum over the limit, whatever clients report, join and leave (property)', async () => {
    const step = fc.record({
      client: fc.integer({ min: 0, max: 5 }),
      op: fc.constantFrom('grant', 'regrant', 'release'),
      demand: fc.double({ min: 0, max: 1000, noNaN: true }),
      advanceMs: fc.integer({ min: 0, max: 4000 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), fc.integer({ min: 0, max: 500 }), async (steps, limit) => {
        const ledger = new MemoryQuotaLedger();
        const held = new Map<string, { granted: number; untilMs: number }>();
        let nowMs = 0;
        for (const s of steps) {
          nowMs += s.advanceMs;
          const id = `c${s.client}`;
          if (s.op === 'release') {
            await ledger.release(id, ['b'], nowMs);
            held.delete(id);
          } else if (s.op === 'grant') {
            const [g] = await ledger.grant(id, [entry(s.demand, limit, 5)], nowMs);
            held.set(id, { granted: g!, untilMs: nowMs + 5000 });
          } else {
            const ids = [...held.keys()];
            const gs = await ledger.regrant(ids, entry(undefined, limit, 5), nowMs);
            // The service pushes a grant (with a fresh TTL) only when it changed.
            ids.forEach((c, i) => {
              if (gs[i] !== undefined && gs[i] !== held.get(c)!.granted)
                held.set(c, { granted: gs[i]!, untilMs: nowMs + 5000 });
            });
          }
          // What clients may still be using: grants not yet expired on their side.
          let live = 0;
          for (const h of held.values()) if (h.untilMs > nowMs) live += h.granted;
          assert.ok(live <= limit, `outstanding ${live} over ${limit} at ${nowMs}`);
        }
      }),
      { numRuns: runs(100) },
    );
  });
});
