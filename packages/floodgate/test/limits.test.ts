import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  consumeAll,
  consumeAllSync,
  decideAll,
  fixedWindow,
  gcra,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Decision,
  type LimitEntry,
  type PolicyStore,
  type Store,
  type StoreRequest,
} from '../src/index.js';
import { runs, sweepCount } from './support/sweep.js';

/** An asynchronous store over a memory store; each answer comes after `delayMs()` ms of real time (0: next microtask). */
function delayedStore(delayMs: () => number = () => 0): Store & { calls: string[] } {
  const inner = new MemoryStore();
  const calls: string[] = [];
  const later = <T>(op: string, run: () => T): Promise<T> => {
    calls.push(op);
    const ms = delayMs();
    if (ms === 0) return Promise.resolve().then(run);
    return new Promise((resolve) => setTimeout(() => resolve(run()), ms));
  };
  return {
    calls,
    bind(algorithm: Algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      return {
        synchronous: false,
        consume: (k, c, t) => later('consume', () => table.consume(k, c, t)),
        peek: (k, c, t) => later('peek', () => table.peek(k, c, t)),
        refund: (k, c, t) => later('refund', () => table.refund(k, c, t)),
        reset: (k) => later('reset', () => table.reset(k)),
      };
    },
  };
}

const left = (limiter: Limiter, key: string): number => limiter.peekSync(key, { cost: 0 }).remaining;
const leftAsync = async (limiter: Limiter, key: string): Promise<number> =>
  (await limiter.peek(key, { cost: 0 })).remaining;

describe('consumeAllSync: several limits on synchronous stores, one step', () => {
  test('admits only when all admit; a refused request is charged nowhere, and every limit is reported', () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const ip = new Limiter({ policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }), store, clock, name: 'ip' });
    const user = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 60_000 }), store, clock, name: 'user' });
    const other = new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 9 }), clock });
    const entries = (u: string): LimitEntry[] => [
      { limiter: ip, key: '1.2.3.4' },
      { limiter: user, key: u },
      { limiter: other, key: u },
    ];
    for (let i = 0; i < 2; i++) assert.equal(consumeAllSync(entries('u')).allowed, true);
    assert.equal(left(ip, '1.2.3.4'), 3);
    const before = [left(ip, '1.2.3.4'), left(user, 'u'), left(other, 'u')];
    const refused = consumeAllSync(entries('u'));
    assert.equal(refused.allowed, false);
    assert.deepEqual(
      refused.decisions.map((d) => d.allowed),
      [true, false, true],
    );
    assert.equal(refused.decisions[0]!.remaining, 2, 'the trial decision of a limit that would admit');
    assert.equal(refused.decisions[1]!.reason, 'limit');
    assert.ok(refused.decisions[1]!.retryAfterMs > 0);
    assert.deepEqual([left(ip, '1.2.3.4'), left(user, 'u'), left(other, 'u')], before, 'nothing charged anywhere');
    assert.equal(consumeAllSync(entries('v')).allowed, true, 'a neighbour on the same ip passes');
    assert.equal(left(ip, '1.2.3.4'), 2);
  });

  test('a refusal puts every charged state back bit for bit, on every policy', () => {
    const clock = new ManualClock(1_000);
    const store = new MemoryStore();
    const blockerPolicy = fixedWindow({ limit: 1, windowMs: 1e12 });
    const policies = [
      tokenBucket({ capacity: 3, refillPerSecond: 0.7 }),
      slidingWindowLog({ limit: 4, windowMs: 900 }),
      gcra({ rate: 3, periodMs: 1000, maxBurst: 2 }),
    ];
    const limiters = policies.map((policy) => new Limiter({ policy, store, clock }));
    const blocker = new Limiter({ policy: blockerPolicy, store, clock });
    blocker.consumeSync('k');
    const tables = policies.map((policy) => store.bind(policy));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), fc.constantFrom(0, 1, 2), fc.boolean()), { maxLength: 30 }),
        (steps) => {
          for (const [dtMs, cost, blocked] of steps) {
            clock.advance(dtMs);
            if (!blocked) {
              consumeAllSync(limiters.map((limiter) => ({ limiter, key: 'k', cost })));
              continue;
            }
            // A cost of 0 charges nothing and is not saved: it may bring a state up to date, as consume(k, 0) does.
            const states = tables.map((t) => t.stateOf('k'));
            const result = consumeAllSync([
              ...limiters.map((limiter) => ({ limiter, key: 'k', cost: Math.max(1, cost) })),
              { limiter: blocker, key: 'k' },
            ]);
            assert.equal(result.allowed, false);
            assert.deepEqual(
              tables.map((t) => t.stateOf('k')),
              states,
              'every cell as it was',
            );
          }
        },
      ),
      { numRuns: runs(100) },
    );
  });

  test('the same key twice under one policy must fit twice; a refusal undoes both', () => {
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 3, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    const refused = consumeAllSync([
      { limiter, key: 'k', cost: 2 },
      { limiter, key: 'k', cost: 2 },
    ]);
    assert.equal(refused.allowed, false);
    assert.equal(left(limiter, 'k'), 3);
    assert.equal(
      consumeAllSync([
        { limiter, key: 'k', cost: 1 },
        { limiter, key: 'k', cost: 2 },
      ]).allowed,
      true,
    );
    assert.equal(left(limiter, 'k'), 0);
  });

  test('a cost above a limit refuses with retryAfterMs Infinity instead of throwing; bad entries throw and leave nothing charged', () => {
    const clock = new ManualClock(0);
    const a = new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 1 }), clock });
    const b = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 1 }), clock });
    const result = consumeAllSync([
      { limiter: b, key: 'k', cost: 5 },
      { limiter: a, key: 'k', cost: 5 },
    ]);
    assert.equal(result.allowed, false);
    assert.equal(result.decisions[1]!.retryAfterMs, Infinity);
    assert.equal(left(b, 'k'), 10);
    const bad = [
      undefined,
      null,
      {},
      { limiter: {}, key: 'k' },
      { limiter: a, key: '' },
      { limiter: a, key: undefined },
      { limiter: a, key: 'k', cost: -1 },
    ];
    for (const entry of bad) {
      assert.throws(
        () => consumeAllSync([{ limiter: b, key: 'k' }, entry as LimitEntry]),
        (e) => e instanceof FloodgateError && /INVALID_/.test(e.code),
      );
      assert.equal(left(b, 'k'), 10, 'the charge before the bad entry was undone');
    }
    assert.throws(
      () => consumeAllSync('x' as never),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
    );
    assert.deepEqual(consumeAllSync([]), { allowed: true, decisions: [] });
  });

  test('an asynchronous store is refused with STORE_NOT_SYNC, a closed limiter with LIMITER_CLOSED', () => {
    const a = new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 1 }), store: delayedStore() });
    assert.throws(
      () => consumeAllSync([{ limiter: a, key: 'k' }]),
      (e) => e instanceof FloodgateError && e.code === 'STORE_NOT_SYNC',
    );
    const b = new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 1 }) });
    b.close();
    assert.throws(
      () => consumeAllSync([{ limiter: b, key: 'k' }]),
      (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED',
    );
  });
});

describe('consumeAll: several limits on any stores', () => {
  test('on synchronous stores it is consumeAllSync, behind a promise; bad input rejects, never throws', async () => {
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
      clock: new ManualClock(0),
    });
    assert.equal((await consumeAll([{ limiter, key: 'k' }])).allowed, true);
    assert.equal((await consumeAll([{ limiter, key: 'k' }])).allowed, false);
    let promise: Promise<unknown> | undefined;
    assert.doesNotThrow(() => (promise = consumeAll([{ limiter, key: undefined as never }])));
    await assert.rejects(promise!, (e) => e instanceof FloodgateError && e.code === 'INVALID_KEY');
  });

  test('the neighbour test: an exhausted user on a delayed store never makes the shared ip refuse its neighbours', async () => {
    // The stores answer after real timers of 0-3 ms, so requests interleave; the windows' time is
    // a manual clock (a run across a real window's boundary would reset the counts), and the
    // limiters have no deadline (timeoutMs Infinity): on a loaded machine a timer can fire past
    // the adaptive deadline's 25 ms, and a timed-out look is answered by fail-open, which is not
    // what this test is about.
    for (let trial = 0; trial < 10 * sweepCount(); trial++) {
      const jitter = (): number => Math.floor(Math.random() * 4);
      const clock = new ManualClock(0);
      const ip = new Limiter({
        policy: fixedWindow({ limit: 10, windowMs: 60_000 }),
        store: delayedStore(jitter),
        name: 'ip',
        clock,
        timeoutMs: Infinity,
      });
      const user = new Limiter({
        policy: fixedWindow({ limit: 1, windowMs: 60_000 }),
        store: delayedStore(jitter),
        name: 'user',
        clock,
        timeoutMs: Infinity,
      });
      const request = (u: string): Promise<{ allowed: boolean }> =>
        consumeAll([
          { limiter: ip, key: '10.0.0.1' },
          { limiter: user, key: u },
        ]);
      assert.equal((await request('attacker')).allowed, true);
      const attacks = Array.from({ length: 60 }, () => request('attacker'));
      const neighbours = Array.from({ length: 9 }, (_, i) => request(`user-${i}`));
      const [a, n] = await Promise.all([Promise.all(attacks), Promise.all(neighbours)]);
      assert.equal(a.filter((r) => r.allowed).length, 0);
      assert.equal(n.filter((r) => !r.allowed).length, 0, `trial ${trial}: a neighbour was refused`);
      assert.equal(await leftAsync(ip, '10.0.0.1'), 0, 'the ip was charged by the 10 admitted requests only');
    }
  });

  test('a memory limit and an asynchronous one: a refusal by either charges neither', async () => {
    const clock = new ManualClock(0);
    const ip = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 60_000 }), clock });
    const user = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), store: delayedStore(), clock });
    assert.equal(
      (
        await consumeAll([
          { limiter: ip, key: 'ip' },
          { limiter: user, key: 'u' },
        ])
      ).allowed,
      true,
    );
    const refused = await consumeAll([
      { limiter: ip, key: 'ip' },
      { limiter: user, key: 'u' },
    ]);
    assert.deepEqual(
      refused.decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.equal(left(ip, 'ip'), 2);
    ip.consumeSync('ip', { cost: 2 });
    const byMemory = await consumeAll([
      { limiter: ip, key: 'ip' },
      { limiter: user, key: 'v' },
    ]);
    assert.deepEqual(
      byMemory.decisions.map((d) => d.allowed),
      [false, true],
    );
    assert.equal(await leftAsync(user, 'v'), 1, 'the asynchronous limit was only looked at');
  });

  test('the race bound: a limit taken between look and charge refunds what was charged, and the state ends exact', async () => {
    const clock = new ManualClock(0);
    const storeA = delayedStore();
    const storeB = delayedStore();
    const a = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), store: storeA, clock });
    const b = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), store: storeB, clock });
    const pending = consumeAll([
      { limiter: a, key: 'k' },
      { limiter: b, key: 'k' },
    ]);
    const racer = b.consume('k'); // reaches store B after the look, before the charge
    const [result, raced] = await Promise.all([pending, racer]);
    assert.equal(raced.allowed, true);
    assert.equal(result.allowed, false);
    assert.deepEqual(
      result.decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.deepEqual(storeA.calls, ['peek', 'consume', 'refund'], 'A was charged once and refunded once');
    assert.equal(await leftAsync(a, 'k'), 1, 'A is back to full');
    assert.equal(await leftAsync(b, 'k'), 0);
  });

  test('a store that decides several requests itself is asked once; when it fails, each entry is decided on its own', async () => {
    const clock = new ManualClock(0);
    const inner = delayedStore();
    let batches = 0;
    let failing = false;
    const store: Store = {
      bind: (algorithm) => inner.bind(algorithm),
      async consumeAll(requests: readonly StoreRequest[]) {
        batches++;
        if (failing) throw new FloodgateError('STORE_ERROR', 'down');
        const tables = requests.map((r) => inner.bind(r.policy));
        const looks: Decision[] = await Promise.all(requests.map((r, i) => tables[i]!.peek(r.key, r.cost ?? 1, 0)));
        if (looks.some((d) => !d.allowed)) return { allowed: false, decisions: looks };
        return {
          allowed: true,
          decisions: await Promise.all(requests.map((r, i) => tables[i]!.consume(r.key, r.cost ?? 1, 0))),
        };
      },
    };
    const x = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 1000 }), store, clock });
    const y = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), store, clock });
    assert.equal(
      (
        await consumeAll([
          { limiter: x, key: 'k' },
          { limiter: y, key: 'k' },
        ])
      ).allowed,
      true,
    );
    assert.equal(batches, 1);
    failing = true;
    assert.equal(
      (
        await consumeAll([
          { limiter: x, key: 'k' },
          { limiter: y, key: 'k' },
        ])
      ).allowed,
      true,
    );
    assert.equal(batches, 2);
    assert.equal(await leftAsync(x, 'k'), 0, 'decided entry by entry after the batch failed');
  });

  test('a closed limiter among asynchronous ones rejects with LIMITER_CLOSED and leaves nothing charged', async () => {
    const clock = new ManualClock(0);
    const good = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), store: delayedStore(), clock });
    const closed = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), store: delayedStore(), clock });
    closed.close();
    await assert.rejects(
      consumeAll([
        { limiter: good, key: 'k' },
        { limiter: closed, key: 'k' },
      ]),
      (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED',
    );
    assert.equal(await leftAsync(good, 'k'), 5);
  });

  test('a store failure under onError throw rejects, and what was charged elsewhere is refunded', async () => {
    const clock = new ManualClock(0);
    const good = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), store: delayedStore(), clock });
    const broken: Store = {
      bind: () => ({
        synchronous: false,
        consume: () => Promise.reject(new Error('connection reset')),
        peek: () =>
          Promise.resolve({ allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetMs: 0, reason: 'ok' }),
        refund: () => Promise.resolve(),
        reset: () => Promise.resolve(),
      }),
    };
    const bad = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 1000 }),
      store: broken,
      clock,
      onError: 'throw',
    });
    await assert.rejects(
      consumeAll([
        { limiter: good, key: 'k' },
        { limiter: bad, key: 'k' },
      ]),
      (e) => e instanceof FloodgateError && e.code === 'STORE_ERROR',
    );
    assert.equal(await leftAsync(good, 'k'), 5);
    const open = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 1000 }), store: broken, clock });
    const result = await consumeAll([
      { limiter: good, key: 'k' },
      { limiter: open, key: 'k' },
    ]);
    assert.equal(result.allowed, true, 'fail-open (the default) admits');
    assert.equal(result.decisions[1]!.reason, 'fail-open');
    const before = await leftAsync(good, 'k');
    const closed = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 1000 }),
      store: broken,
      clock,
      onError: 'fail-closed',
    });
    const refused = await consumeAll([
      { limiter: good, key: 'k' },
      { limiter: closed, key: 'k' },
    ]);
    assert.equal(refused.allowed, false, 'fail-closed refuses the request');
    assert.equal(refused.decisions[1]!.reason, 'fail-closed');
    assert.equal(await leftAsync(good, 'k'), before, "and the other limit's charge was given back");
  });
});

describe('decideAll: the multi-limit decision with every limit standing', () => {
  test('on synchronous stores it answers without a promise; a refusal shows what the other limits have left', () => {
    const clock = new ManualClock(0);
    const ip = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock, name: 'ip' });
    const user = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }), clock, name: 'user' });
    const entries: LimitEntry[] = [
      { limiter: ip, key: 'ip', cost: 2 },
      { limiter: user, key: 'u' },
    ];
    const first = decideAll(entries);
    assert.ok(!(first instanceof Promise), 'memory stores answer at once');
    assert.equal(first.allowed, true);
    assert.deepEqual(
      first.decisions.map((d) => d.remaining),
      [3, 0],
    );
    const refused = decideAll(entries);
    assert.ok(!(refused instanceof Promise));
    assert.equal(refused.allowed, false);
    assert.deepEqual(
      refused.decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 3],
        [false, 0],
      ],
      "the ip limit reports its standing 3, not the trial's 1: the refused request was charged nowhere",
    );
    assert.equal(left(ip, 'ip'), 3);
    const trial = consumeAllSync(entries);
    assert.equal(trial.decisions[0]!.remaining, 1, 'consumeAllSync itself still reports the trial');
  });

  test('on an asynchronous store: a promise, the standing looked up, the trial kept where the look fails', async () => {
    const clock = new ManualClock(0);
    const store = delayedStore();
    const ip = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), store, clock, name: 'ip' });
    const user = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 60_000 }), clock, name: 'user' });
    const entries: LimitEntry[] = [
      { limiter: ip, key: 'ip', cost: 2 },
      { limiter: user, key: 'u' },
    ];
    const first = decideAll(entries);
    assert.ok(first instanceof Promise);
    assert.equal((await first).allowed, true);
    const refused = await decideAll(entries);
    assert.deepEqual(
      refused.decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 3],
        [false, 0],
      ],
    );
    assert.equal(await leftAsync(ip, 'ip'), 3);

    // Across stores the limits are looked at first; the look after the refusal is the second, and fails.
    let peeks = 0;
    const failing: Store = {
      bind(algorithm: Algorithm): PolicyStore {
        const table = new MemoryStore().bind(algorithm);
        return {
          synchronous: false,
          consume: (k, c, t) => Promise.resolve(table.consume(k, c, t)),
          peek: (k, c, t) =>
            ++peeks > 1
              ? Promise.reject(new FloodgateError('STORE_ERROR', 'down for the look'))
              : Promise.resolve(table.peek(k, c, t)),
          refund: (k, c, t) => Promise.resolve(table.refund(k, c, t)),
          reset: (k) => Promise.resolve(table.reset(k)),
        };
      },
    };
    const shaky = new Limiter({
      policy: fixedWindow({ limit: 5, windowMs: 60_000 }),
      store: failing,
      clock,
      onError: 'throw',
    });
    const kept = await decideAll([
      { limiter: shaky, key: 'k' },
      { limiter: user, key: 'u' },
    ]);
    assert.equal(kept.allowed, false);
    assert.deepEqual(
      kept.decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 4],
        [false, 0],
      ],
      'the look failed, so the trial decision stands',
    );
  });

  test('bad input throws or rejects as the call it makes does', async () => {
    const memory = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock: new ManualClock(0) });
    assert.throws(
      () => decideAll([{ limiter: memory, key: undefined as never }]),
      (e) => e instanceof FloodgateError && e.code === 'INVALID_KEY',
    );
    await assert.rejects(
      decideAll('x' as never) as Promise<unknown>,
      (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
    );
    await assert.rejects(
      decideAll([{ limiter: {} as never, key: 'k' }]) as Promise<unknown>,
      (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
    );
  });
});
