import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { makeDecision } from '../../src/core/decision.js';
import { AdmitMemo } from '../../src/http/admit-memo.js';
import { FIELD, serviceHead, serviceItem } from '../../src/http/headers.js';
import { HttpGate } from '../../src/http/index.js';
import { Limiter, ManualClock, tokenBucket } from '../../src/index.js';
import { FakeView, memoryLogger } from './support.js';
import { runs } from '../support/sweep.js';

const HEAD = serviceHead('api');

/** An admitted decision with `remaining` left and a reset `resetMs` away (Infinity: never). */
const admitted = (remaining: number, resetMs: number) => makeDecision(true, 100, remaining, 0, resetMs);

describe('AdmitMemo', () => {
  /** A memo of each decision's `RateLimit` item, wrapped so that reuse shows as the same object. */
  const memoOf = () => new AdmitMemo((d) => ({ item: serviceItem(HEAD, d, undefined) }));

  it('answers every decision with the value made afresh, whatever came before it', () => {
    // Small ranges make slots collide often: a memo that kept a stale value would show it here.
    const decision = fc.record({
      remaining: fc.oneof(
        fc.integer({ min: 0, max: 600 }),
        fc.constantFrom(2 ** 31, 2 ** 32 + 5, 999_999_999_999, Number.MAX_SAFE_INTEGER),
      ),
      resetMs: fc.oneof(fc.integer({ min: 0, max: 300_000 }), fc.constant(Infinity)),
    });
    fc.assert(
      fc.property(fc.array(decision, { minLength: 1, maxLength: 400 }), (steps) => {
        const memo = memoOf();
        for (const step of steps) {
          const d = admitted(step.remaining, step.resetMs);
          assert.equal(memo.valueOf(d).item, serviceItem(HEAD, d, undefined));
        }
      }),
      { numRuns: runs(100) },
    );
  });

  it('reuses one value for a repeated remaining and t, and tells apart the same r with another t', () => {
    const memo = memoOf();
    const first = memo.valueOf(admitted(7, 2_500));
    assert.equal(memo.valueOf(admitted(7, 2_100)), first, 't is 3 both times');
    const later = memo.valueOf(admitted(7, 3_500));
    assert.notEqual(later, first);
    assert.equal(later.item, '"api";r=7;t=4');
    assert.equal(memo.valueOf(admitted(7, Infinity)).item, '"api";r=7');
  });
});

describe('HttpGate with the admit memo', () => {
  const gate = (options: Record<string, unknown> = {}) => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ clock, policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }) });
    return { clock, gate: new HttpGate({ limiter, name: 'api', logger: memoryLogger(), ...options }) };
  };
  const view = (g: HttpGate) => new FakeView(g.clientIp, { remote: '192.0.2.1' });

  it('reports each admission as it stands, as the bucket drains and refills', () => {
    const { clock, gate: g } = gate();
    const seen: string[] = [];
    for (let i = 0; i < 3; i++)
      seen.push(String((g.check(view(g)) as { headers: readonly (readonly string[])[] }).headers[1]![1]));
    clock.advance(1_000);
    seen.push(String((g.check(view(g)) as { headers: readonly (readonly string[])[] }).headers[1]![1]));
    assert.deepEqual(seen, ['"api";r=4;t=1', '"api";r=3;t=2', '"api";r=2;t=3', '"api";r=2;t=3']);
  });

  it('is not used when admissions carry more than the draft headers: refunds, legacy headers, partition keys', () => {
    for (const options of [
      { refundWhen: () => true },
      { legacyHeaders: true },
      { partitionKeys: { secret: 'a test secret of 32 characters.' } },
    ]) {
      const { clock, gate: g } = gate(options);
      // The same r and t twice: a memo would answer the second from the first.
      const a = g.check(view(g));
      clock.advance(1_000);
      const b = g.check(view(g));
      for (const v of [a, b]) {
        assert.ok(!(v instanceof Promise));
        if ('refundWhen' in options) assert.equal(v.charges?.length, 1);
        if ('legacyHeaders' in options) assert.ok(v.headers.some(([n]) => n === FIELD.legacyRemaining));
        if ('partitionKeys' in options)
          assert.match(v.headers.find(([n]) => n === FIELD.service)![1], /"api";r=4;t=1;pk=:/);
      }
      assert.notEqual(a, b);
    }
  });
});

describe('AdmitMemo when remaining counts down on every request', () => {
  it('pauses after a run of misses, answering the same values, and remembers again after the pause', () => {
    let made = 0;
    const memo = new AdmitMemo((d) => (made++, { item: serviceItem(HEAD, d, undefined) }));
    for (let r = 100_000; r > 100_000 - 64; r--) memo.valueOf(admitted(r, 5_000));
    const beforePause = made;
    // Paused: a repeated pair is made afresh (nothing kept), and still answered right.
    const a = memo.valueOf(admitted(7, 5_000));
    const b = memo.valueOf(admitted(7, 5_000));
    assert.equal(made, beforePause + 2);
    assert.equal(a.item, '"api";r=7;t=5');
    assert.notEqual(a, b);
    for (let i = 0; i < 4096; i++) memo.valueOf(admitted(50_000 - i, 5_000));
    const c = memo.valueOf(admitted(7, 5_000));
    assert.equal(memo.valueOf(admitted(7, 5_000)), c, 'remembering again after the pause');
  });
});
