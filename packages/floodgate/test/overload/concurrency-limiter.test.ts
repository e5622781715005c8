import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ConcurrencyLimiter,
  ConcurrencyPermit,
  FloodgateError,
  ManualClock,
  type Admission,
  type ConcurrencyLimiterOptions,
} from 'floodgate';

function limiter(options: Partial<ConcurrencyLimiterOptions> = {}): {
  clock: ManualClock;
  limiter: ConcurrencyLimiter;
} {
  const clock = new ManualClock(0);
  return { clock, limiter: new ConcurrencyLimiter({ limit: 2, ...options, clock }) };
}

function permit(admission: Admission | Promise<Admission>): ConcurrencyPermit {
  assert.ok(!(admission instanceof Promise), 'decided at once');
  assert.ok(admission.allowed, `admitted, got ${JSON.stringify(admission)}`);
  return admission;
}

/** Lets the promise reactions of settled waiters run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('ConcurrencyLimiter: a fixed limit', () => {
  test('admits up to the limit, sheds the next at once with reason limit, and frees a slot on release', () => {
    const { limiter: l } = limiter();
    const a = permit(l.tryAcquire());
    permit(l.acquire());
    const shed = l.acquire();
    assert.deepEqual(shed, { allowed: false, reason: 'limit', tier: 0, retryAfterMs: 1 });
    assert.equal(l.inFlight, 2);
    a.release();
    assert.equal(l.inFlight, 1);
    permit(l.tryAcquire());
  });

  test('a permit released twice throws PERMIT_RELEASED and moves no counter', () => {
    const { limiter: l } = limiter();
    const a = permit(l.acquire());
    permit(l.acquire());
    a.release();
    assert.throws(
      () => a.release(),
      (e) => e instanceof FloodgateError && e.code === 'PERMIT_RELEASED',
    );
    assert.equal(l.inFlight, 1);
    assert.equal(a.released, true);
  });

  test('a permit is Disposable: released at the end of a using block, once', () => {
    const { limiter: l } = limiter();
    {
      const p = permit(l.acquire());
      p[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
      assert.equal(l.inFlight, 0);
      p[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
    }
    assert.equal(l.inFlight, 0);
  });
});

describe('ConcurrencyLimiter: the wait line', () => {
  test('first in, first out while it drains; a full line sheds queue-full; a deadline sheds queue-timeout', async () => {
    const { clock, limiter: l } = limiter({ limit: 1, maxQueue: 2, maxWaitMs: 50, order: 'fifo' });
    const held = permit(l.acquire());
    const first = l.acquire() as Promise<Admission>;
    clock.advance(1);
    const second = l.acquire() as Promise<Admission>;
    assert.deepEqual(l.acquire(), { allowed: false, reason: 'queue-full', tier: 0, retryAfterMs: 1 });
    assert.equal(l.queued, 2);
    held.release();
    const got = await first;
    assert.ok(got.allowed);
    clock.advance(50); // the second waiter's deadline, 51 ms
    assert.deepEqual(await second, { allowed: false, reason: 'queue-timeout', tier: 0, retryAfterMs: 1 });
    assert.equal(l.queued, 0);
    assert.equal(l.inFlight, 1);
  });

  test("a standing queue serves the newest first and sheds waiters older than CoDel's target", async () => {
    const { clock, limiter: l } = limiter({
      limit: 1,
      maxQueue: 10,
      maxWaitMs: 1000,
      codel: { intervalMs: 100, targetMs: 5 },
    });
    let held = permit(l.acquire());
    const order: number[] = [];
    const waits: Promise<Admission>[] = [];
    for (let i = 0; i < 3; i++) {
      const w = l.acquire() as Promise<Admission>;
      void w.then((a) => a.allowed && order.push(i));
      waits.push(w);
    }
    // Keep the line from emptying for more than the interval, adding a fresh waiter just before the end.
    clock.advance(101);
    const fresh = l.acquire() as Promise<Admission>;
    void fresh.then((a) => a.allowed && order.push(3));
    held.release(); // standing: the newest (3) is served, and the three older than 5 ms are shed
    const results = await Promise.all(waits);
    assert.deepEqual(
      results.map((r) => r.allowed || r.reason),
      ['queue-timeout', 'queue-timeout', 'queue-timeout'],
    );
    held = (await fresh) as ConcurrencyPermit;
    assert.deepEqual(order, [3]);
    held.release();
    assert.equal(l.queued, 0);
  });

  test('an abort sheds the waiter as aborted and leaves the line', async () => {
    const { limiter: l } = limiter({ limit: 1, maxQueue: 5 });
    permit(l.acquire());
    const controller = new AbortController();
    const waiting = l.acquire({ signal: controller.signal }) as Promise<Admission>;
    controller.abort();
    assert.equal((await waiting).allowed || ((await waiting) as { reason: string }).reason, 'aborted');
    assert.equal(l.queued, 0);
    const pre = new AbortController();
    pre.abort();
    assert.deepEqual(l.acquire({ signal: pre.signal }), {
      allowed: false,
      reason: 'aborted',
      tier: 0,
      retryAfterMs: 1,
    });
  });

  test('no timer is left once nobody waits', async () => {
    const { clock, limiter: l } = limiter({ limit: 1, maxQueue: 5, maxWaitMs: 10 });
    const held = permit(l.acquire());
    const w = l.acquire() as Promise<Admission>;
    held.release();
    await w;
    await flush();
    clock.advance(1000);
    assert.equal(l.queued, 0);
  });
});

describe('ConcurrencyLimiter: priority tiers', () => {
  test('a lower tier is held back from the top of the limit; the top tier is not', () => {
    const { limiter: l } = limiter({ limit: 10, tiers: 3, reserveRatio: 0.2 });
    for (let i = 0; i < 6; i++) permit(l.acquire({ tier: 2 }));
    assert.equal((l.acquire({ tier: 2 }) as Admission).allowed, false, 'tier 2 may fill 60%');
    for (let i = 0; i < 2; i++) permit(l.acquire({ tier: 1 }));
    assert.equal((l.acquire({ tier: 1 }) as Admission).allowed, false, 'tier 1 may fill 80%');
    for (let i = 0; i < 2; i++) permit(l.acquire({ tier: 0 }));
    assert.equal((l.acquire({ tier: 0 }) as Admission).allowed, false);
    assert.equal(l.inFlight, 10);
  });

  test("under an adaptive limit the room held back follows the tiers above's demand: their arrival rate × the calls' latency, with room for bursts", () => {
    // An adaptive limit held at 20 (its floor and ceiling), so that only the tiers' demand moves.
    const adaptive = { initialLimit: 20, minLimit: 20, maxLimit: 20 };
    const { clock, limiter: l } = limiter({ limit: undefined, adaptive, tiers: 2, reserveRatio: 0.1 });
    // Before any latency is known, only reserveRatio holds back: tier 1 may fill 18 of 20.
    const early = Array.from({ length: 18 }, () => permit(l.acquire({ tier: 1 })));
    assert.equal((l.acquire({ tier: 1 }) as Admission).allowed, false);
    for (const p of early) p.release();
    // Tier 0 asks for a slot every 5 ms (0.2 a ms) for 2 s, each call held 20 ms: 4 in flight on
    // average, so 4 + 2 × √4 = 8 slots are held back for it, more than the 2 of reserveRatio.
    const inFlight: ConcurrencyPermit[] = [];
    for (let ms = 0; ms < 2000; ms += 5) {
      if (inFlight.length === 4) inFlight.shift()!.release();
      inFlight.push(permit(l.acquire({ tier: 0 })));
      clock.advance(5);
    }
    while (inFlight.length > 0) {
      inFlight.shift()!.release(); // each after its 20 ms
      clock.advance(5);
    }
    const lower = Array.from({ length: 12 }, () => permit(l.acquire({ tier: 1 })));
    assert.equal((l.acquire({ tier: 1 }) as Admission).allowed, false, 'tier 1 may fill 20 - 8 = 12');
    for (let i = 0; i < 8; i++) permit(l.acquire({ tier: 0 }));
    assert.equal((l.acquire({ tier: 0 }) as Admission).allowed, false);
    assert.equal(l.inFlight, 20, 'the top tier fills the rest');
    for (const p of lower) p.release();
  });

  test('under a fixed limit the room held back is reserveRatio alone, whatever the demand above', () => {
    const { clock, limiter: l } = limiter({ limit: 20, tiers: 2, reserveRatio: 0.1 });
    const inFlight: ConcurrencyPermit[] = [];
    for (let ms = 0; ms < 2000; ms += 5) {
      if (inFlight.length === 4) inFlight.shift()!.release();
      inFlight.push(permit(l.acquire({ tier: 0 })));
      clock.advance(5);
    }
    for (const p of inFlight) p.release();
    for (let i = 0; i < 18; i++) permit(l.acquire({ tier: 1 }));
    assert.equal((l.acquire({ tier: 1 }) as Admission).allowed, false, 'tier 1 may fill 18 of 20');
  });

  test('a freed slot goes to the most important waiter, whatever the arrival order', async () => {
    const { limiter: l } = limiter({ limit: 1, tiers: 2, maxQueue: 5 });
    const held = permit(l.acquire({ tier: 0 }));
    const batch = l.acquire({ tier: 1 }) as Promise<Admission>;
    const critical = l.acquire({ tier: 0 }) as Promise<Admission>;
    held.release();
    const got = await critical;
    assert.ok(got.allowed && got.tier === 0);
    assert.equal(l.queued, 1);
    got.release();
    assert.ok((await batch).allowed);
  });

  test('a full line sheds its least important waiter (the newest of the lowest tier) for a more important caller', async () => {
    const { limiter: l } = limiter({ limit: 1, tiers: 3, maxQueue: 3 });
    const held = permit(l.acquire({ tier: 0 }));
    const normal = l.acquire({ tier: 1 }) as Promise<Admission>;
    const bulkOld = l.acquire({ tier: 2 }) as Promise<Admission>;
    const bulkNew = l.acquire({ tier: 2 }) as Promise<Admission>;
    const critical = l.acquire({ tier: 0 });
    assert.ok(critical instanceof Promise, 'the critical caller waits instead of being shed');
    assert.deepEqual(await bulkNew, { allowed: false, reason: 'queue-full', tier: 2, retryAfterMs: 1 });
    assert.equal(l.queued, 3);
    // A bulk caller finds the line full of callers at least as important: it is the one shed.
    assert.deepEqual(l.acquire({ tier: 2 }), { allowed: false, reason: 'queue-full', tier: 2, retryAfterMs: 1 });
    held.release();
    const first = await critical;
    assert.ok(first.allowed && first.tier === 0);
    first.release();
    const second = await normal;
    assert.ok(second.allowed && second.tier === 1);
    second.release();
    assert.ok((await bulkOld).allowed);
  });

  test('a newcomer never overtakes a waiter of its tier or above', () => {
    const { limiter: l } = limiter({ limit: 1, tiers: 2, maxQueue: 5 });
    const held = permit(l.acquire({ tier: 0 }));
    void l.acquire({ tier: 0 });
    held.release(); // the waiter takes it synchronously
    assert.equal(l.inFlight, 1);
    assert.equal((l.tryAcquire(1) as Admission).allowed, false);
  });
});

describe('ConcurrencyLimiter: adaptive', () => {
  test('shed calls never feed the latency signal', () => {
    const clock = new ManualClock(0);
    const l = new ConcurrencyLimiter({
      adaptive: { initialLimit: 2, minLimit: 2, minSamples: 1, windowMs: 10 },
      clock,
    });
    const a = permit(l.acquire());
    permit(l.acquire());
    for (let i = 0; i < 100; i++) assert.equal((l.acquire() as Admission).allowed, false);
    clock.advance(50);
    assert.equal(l.snapshot().adaptive!.sampleRttMs, undefined);
    a.release();
    assert.equal(l.snapshot().adaptive!.sampleRttMs, 50);
  });

  test('pressure (a second signal, such as event-loop delay) turns successes into drops', () => {
    const clock = new ManualClock(0);
    const l = new ConcurrencyLimiter({
      adaptive: { initialLimit: 40, minSamples: 1, windowMs: 10, backoffRatio: 0.5 },
      clock,
      pressure: () => true,
    });
    const p = permit(l.acquire());
    const q = permit(l.acquire());
    clock.advance(20);
    p.release(); // opens the window
    assert.equal(l.limit, 40);
    clock.advance(20);
    q.release(); // closes it, with two drops
    assert.equal(l.limit, 20);
  });
});

describe('ConcurrencyLimiter: bad input', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{}, 'limit'],
    [{ limit: 2, adaptive: true }, 'limit'],
    [{ limit: 0 }, 'ConcurrencyLimiter.limit'],
    [{ limit: 1.5 }, 'ConcurrencyLimiter.limit'],
    [{ limit: 2, tiers: 0 }, 'ConcurrencyLimiter.tiers'],
    [{ limit: 2, tiers: 3, reserveRatio: 0.5 }, 'ConcurrencyLimiter.reserveRatio'],
    [{ limit: 2, maxQueue: -1 }, 'ConcurrencyLimiter.maxQueue'],
    [{ limit: 2, maxWaitMs: -1 }, 'ConcurrencyLimiter.maxWaitMs'],
    [{ limit: 2, order: 'lifo' }, 'ConcurrencyLimiter.order'],
    [{ limit: 2, pressure: 3 }, 'ConcurrencyLimiter.pressure'],
    [{ adaptive: { minLimit: 5, maxLimit: 2 } }, 'adaptive.minLimit'],
  ];
  for (const [options, option] of cases) {
    test(`${JSON.stringify(options)} is INVALID_OPTION on ${option}`, () => {
      assert.throws(
        () => new ConcurrencyLimiter(options as ConcurrencyLimiterOptions),
        (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === option,
      );
    });
  }

  test('a tier out of range is INVALID_OPTION and moves no counter', () => {
    const { limiter: l } = limiter({ tiers: 2 });
    assert.throws(
      () => l.acquire({ tier: 2 }),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === 'tier',
    );
    assert.throws(
      () => l.tryAcquire(-1),
      (e) => e instanceof FloodgateError && e.option === 'tier',
    );
    assert.equal(l.inFlight, 0);
  });

  test('a release outcome that is not one of the three is INVALID_OPTION and frees nothing', () => {
    const { limiter: l } = limiter();
    const p = permit(l.acquire());
    assert.throws(
      () => p.release('fine' as never),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
    );
    assert.equal(l.inFlight, 1);
    p.release();
    assert.equal(l.inFlight, 0);
  });
});
