import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  demandOf,
  expiresAtMs,
  grantOf,
  idleTooLong,
  targetOf,
  waterLevelOf,
} from '../../src/ratelimit/quota/fair-share.js';
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
