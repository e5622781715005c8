import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  askLease,
  fixedWindow,
  gcra,
  leaseOverAdmission,
  leaseSettingsOf,
  leaseTermsOf,
  returnLease,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type LeaseHolder,
  type LeaseTerms,
} from '../../src/index.js';
import { runs } from '../support/sweep.js';

/** A key's shared state: the policy's cells and its ledger, as the lease script keeps them. */
function key(policy: Algorithm, nowMs: number): { cells: Float64Array; holders: Map<string, LeaseHolder> } {
  const cells = new Float64Array(policy.width);
  policy.init(cells, 0, nowMs);
  return { cells, holders: new Map() };
}

const bucket = tokenBucket({ capacity: 1000, refillPerSecond: 1000 });
const terms = (policy: Algorithm, share = 0.02, leaseMs = 1000): LeaseTerms =>
  leaseTermsOf(policy, leaseSettingsOf({ maxOutstandingShare: share, leaseMs }, 'lease'));

describe('askLease: the ledger rules', () => {
  test('a lone holder gets what it wants, up to maxOutstanding, taken from the policy', () => {
    const t = terms(bucket);
    assert.equal(t.maxOutstanding, 20);
    const k = key(bucket, 0);
    const a = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 5e5, held: 0, wanted: 500, spend: 0 },
      0,
      t,
    );
    assert.equal(a.granted, 20);
    assert.equal(a.durationMs, 1000);
    assert.equal(a.expiresAtMs, 1000);
    assert.equal(bucket.peek(k.cells, 0, 0, 0).remaining, 980, 'the units left the bucket when leased');
    const again = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 5e5, held: 20, wanted: 500, spend: 0 },
      0,
      t,
    );
    assert.equal(again.granted, 0, 'a holder at its portion gets nothing more');
  });

  test('holders share maxOutstanding in proportion to their demand', () => {
    const t = terms(bucket);
    const k = key(bucket, 0);
    askLease(bucket, k.cells, 0, k.holders, { holder: 'a', demand: 3e5, held: 0, wanted: 1, spend: 0 }, 0, t);
    askLease(bucket, k.cells, 0, k.holders, { holder: 'b', demand: 1e5, held: 0, wanted: 1, spend: 0 }, 0, t);
    // Now a holds 1, b holds 1; their portions are 15 and 5.
    const a = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 3e5, held: 1, wanted: 100, spend: 0 },
      0,
      t,
    );
    const b = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'b', demand: 1e5, held: 1, wanted: 100, spend: 0 },
      0,
      t,
    );
    assert.equal(a.granted, 14);
    assert.equal(b.granted, 4);
    assert.equal(a.holders, 2);
  });

  test('a request waiting for units is decided by the same ask, and refused with nothing granted', () => {
    const small = tokenBucket({ capacity: 100, refillPerSecond: 10 });
    const t = terms(small, 0.1);
    const k = key(small, 0);
    small.consume(k.cells, 0, 0, 95);
    const ok = askLease(
      small,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e3, held: 0, wanted: 10, spend: 3 },
      0,
      t,
    );
    assert.equal(ok.spent, true);
    const no = askLease(
      small,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e3, held: 0, wanted: 10, spend: 3 },
      0,
      t,
    );
    assert.equal(no.spent, false);
    assert.equal(no.granted, 0);
    assert.ok(no.retryAfterMs >= 100, `retry after ${no.retryAfterMs} ms`);
  });

  test('a fixed window lease ends with its window, and a late return gives nothing back', () => {
    const fw = fixedWindow({ limit: 1000, windowMs: 1000 });
    const t = terms(fw, 0.05, 5000);
    const k = key(fw, 1700);
    const a = askLease(
      fw,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 0, wanted: 100, spend: 0 },
      1700,
      t,
    );
    assert.equal(a.granted, 50);
    assert.equal(a.durationMs, 300, 'cut at the window end, 2000');
    assert.equal(
      returnLease(
        fw,
        k.cells,
        0,
        k.holders,
        { holder: 'a', units: 10, expiresAtMs: a.expiresAtMs, held: 40, leaving: false },
        1900,
      ),
      10,
    );
    assert.equal(fw.peek(k.cells, 0, 1900, 0).remaining, 960);
    assert.equal(
      returnLease(
        fw,
        k.cells,
        0,
        k.holders,
        { holder: 'a', units: 40, expiresAtMs: a.expiresAtMs, held: 0, leaving: true },
        2000,
      ),
      0,
    );
    assert.equal(k.holders.size, 0, 'a leaving holder ends its record');
  });

  test('a dead holder counts until its record ends, then its share goes to the others', () => {
    const t = terms(bucket, 0.02, 1000);
    const k = key(bucket, 0);
    const dead = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'dead', demand: 1e6, held: 0, wanted: 5, spend: 0 },
      0,
      t,
    );
    assert.equal(dead.granted, 5);
    const before = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 0, wanted: 100, spend: 0 },
      10,
      t,
    );
    assert.equal(before.granted, 10, 'half of maxOutstanding while the dead holder counts');
    const after = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 10, wanted: 100, spend: 0 },
      1000,
      t,
    );
    assert.equal(after.holders, 1);
    assert.equal(after.granted, 10, 'the whole of maxOutstanding once its record ended');
  });

  test('under contention a holder takes only its credit, its share of the rate, and is told when to come back', () => {
    const t = terms(bucket, 0.02);
    const k = key(bucket, 0);
    bucket.consume(k.cells, 0, 0, 961); // 39 left: contended (< 2 x 20)
    const a = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 0, wanted: 100, spend: 1 },
      0,
      t,
    );
    assert.equal(a.spent, true);
    assert.equal(a.granted, 19, 'its credit (20, its whole portion) less the request it paid for');
    const b = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 0, wanted: 100, spend: 1 },
      0,
      t,
    );
    assert.equal(b.spent, false, 'no credit left, though the bucket has 19');
    assert.equal(b.granted, 0);
    assert.equal(b.retryAfterMs, 1, 'its credit refills at its share of the rate: 1 per ms');
    assert.equal(b.nextAskInMs, 15, 'until its credit is 3/4 of its portion again');
    const c = askLease(
      bucket,
      k.cells,
      0,
      k.holders,
      { holder: 'a', demand: 1e6, held: 0, wanted: 100, spend: 1 },
      1,
      t,
    );
    assert.equal(c.spent, true);
  });

  test("under contention holders get the policy's rate in proportion to their demand", () => {
    const t = terms(bucket, 0.02);
    const k = key(bucket, 0);
    bucket.consume(k.cells, 0, 0, 1000);
    const got = { a: 0, b: 0 };
    for (let nowMs = 0; nowMs < 5000; nowMs += 5) {
      for (const [holder, demand] of [
        ['a', 3e6],
        ['b', 1e6],
      ] as const) {
        const answer = askLease(
          bucket,
          k.cells,
          0,
          k.holders,
          { holder, demand, held: 0, wanted: 1000, spend: 0 },
          nowMs,
          t,
        );
        got[holder] += answer.granted;
      }
    }
    const total = got.a + got.b;
    assert.ok(total >= 4900 && total <= 5000, `the policy's rate is used: ${total}`);
    assert.ok(Math.abs(got.a / total - 0.75) < 0.02, `a's share ${got.a / total}`);
  });

  test('policies leases are not sound for are refused with a typed error', () => {
    for (const policy of [
      slidingWindowLog({ limit: 10, windowMs: 1000 }),
      slidingWindowCounter({ limit: 10, windowMs: 1000 }),
    ]) {
      assert.throws(
        () => leaseTermsOf(policy, leaseSettingsOf(undefined, 'lease')),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && /sliding window/.test(e.message),
      );
    }
    assert.ok(leaseTermsOf(gcra({ rate: 10, periodMs: 1000, maxBurst: 9 }), leaseSettingsOf(undefined, 'lease')));
  });

  test('bad settings name the option', () => {
    for (const [options, option] of [
      [{ leaseMs: 0 }, 'lease.leaseMs'],
      [{ maxOutstandingShare: 2 }, 'lease.maxOutstandingShare'],
      [{ maxKeys: 1.5 }, 'lease.maxKeys'],
    ] as const) {
      assert.throws(
        () => leaseSettingsOf(options, 'lease'),
        (e: unknown) => e instanceof FloodgateError && e.option === option,
      );
    }
  });

  test('the stated bound: maxOutstanding for buckets and GCRA, nothing for a fixed window', () => {
    assert.equal(leaseOverAdmission(tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 })), 200);
    assert.equal(
      leaseOverAdmission(tokenBucket({ capacity: 10, refillPerSecond: 1 }), { maxOutstandingShare: 0.02 }),
      1,
    );
    assert.equal(leaseOverAdmission(fixedWindow({ limit: 10_000, windowMs: 1000 })), 0);
  });
});

describe('askLease: invariants on random asks (fast-check)', () => {
  // Random asks and returns from 4 holders on one key; each holder spends some of what it holds.
  const stepArb = fc.record({
    holder: fc.integer({ min: 0, max: 3 }),
    advanceMs: fc.integer({ min: 0, max: 400 }),
    demand: fc.integer({ min: 0, max: 5e6 }),
    wanted: fc.integer({ min: 0, max: 300 }),
    spend: fc.constantFrom(0, 0, 1, 2),
    spendFraction: fc.double({ min: 0, max: 1, noNaN: true }),
    giveBack: fc.boolean(),
  });

  for (const [name, policy] of [
    ['token bucket', tokenBucket({ capacity: 500, refillPerSecond: 500 })],
    ['fixed window', fixedWindow({ limit: 500, windowMs: 1000 })],
    ['gcra', gcra({ rate: 500, periodMs: 1000, maxBurst: 499 })],
  ] as const) {
    test(`${name}: outstanding never above maxOutstanding; no unit granted twice; per window, spent + outstanding <= limit`, () => {
      fc.assert(
        fc.property(
          fc.array(stepArb, { minLength: 1, maxLength: 120 }),
          fc.double({ min: 0.01, max: 0.5, noNaN: true }),
          (steps, share) => {
            const t = terms(policy, share, 700);
            let nowMs = 10_000;
            const k = key(policy, nowMs);
            // What each holder holds, by chunk: units and the chunk's end.
            const held = [0, 1, 2, 3].map(() => [] as { units: number; endMs: number }[]);
            let taken = 0; // units the policy counted for leases and spends, in the current fixed window
            let spentInWindow = 0;
            let window = Math.floor(nowMs / 1000);
            for (const s of steps) {
              nowMs += s.advanceMs;
              for (const chunks of held) while (chunks.length > 0 && chunks[0]!.endMs <= nowMs) chunks.shift();
              if (Math.floor(nowMs / 1000) !== window) {
                window = Math.floor(nowMs / 1000);
                taken = 0;
                spentInWindow = 0;
              }
              const mine = held[s.holder]!;
              const have = mine.reduce((sum, c) => sum + c.units, 0);
              if (s.giveBack && mine.length > 0) {
                const chunk = mine.shift()!;
                const given = returnLease(
                  policy,
                  k.cells,
                  0,
                  k.holders,
                  {
                    holder: String(s.holder),
                    units: chunk.units,
                    expiresAtMs: chunk.endMs,
                    held: have - chunk.units,
                    leaving: false,
                  },
                  nowMs,
                );
                assert.equal(given, chunk.units, 'a return within its lease is taken back whole');
                taken -= given;
                continue;
              }
              const before = policy.peek(k.cells, 0, nowMs, 0).remaining;
              const a = askLease(
                policy,
                k.cells,
                0,
                k.holders,
                { holder: String(s.holder), demand: s.demand, held: have, wanted: s.wanted, spend: s.spend },
                nowMs,
                t,
              );
              const after = policy.peek(k.cells, 0, nowMs, 0).remaining;
              const charged = a.granted + (a.spent ? s.spend : 0);
              // No unit is handed out that the policy did not count: the policy lost exactly what was granted and spent.
              if (policy.name !== 'token-bucket' && policy.name !== 'gcra') assert.equal(before - after, charged);
              else assert.ok(before - after >= charged - 1 && before - after <= charged + 1e-9);
              if (a.spent) {
                taken += s.spend;
                spentInWindow += s.spend;
              }
              if (a.granted > 0) {
                mine.push({ units: a.granted, endMs: a.expiresAtMs });
                taken += a.granted;
              }
              // The holder spends part of what it holds.
              let spend = Math.floor(mine.reduce((sum, c) => sum + c.units, 0) * s.spendFraction);
              spentInWindow += spend;
              for (const chunk of mine) {
                const use = Math.min(chunk.units, spend);
                chunk.units -= use;
                spend -= use;
              }
              const outstanding = held.flat().reduce((sum, c) => sum + c.units, 0);
              assert.ok(
                outstanding <= t.maxOutstanding,
                `outstanding ${outstanding} > maxOutstanding ${t.maxOutstanding}`,
              );
              if (policy.name === 'fixed-window') {
                assert.ok(spentInWindow + outstanding <= policy.limit, 'spent + outstanding within the window limit');
                assert.ok(taken <= policy.limit);
              }
            }
          },
        ),
        { numRuns: runs(150) },
      );
    });
  }
});
