import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  decideAll,
  decideOne,
  fixedWindow,
  tokenBucket,
  type Decision,
  type DecisionEvent,
  type LimiterOptions,
  type LimitsDecision,
  type PolicyStore,
  type Store,
} from '../src/index.js';
import { laterStore } from './support/later-store.js';

/** A store whose every call fails as a backend does, at once (`synchronous`) or by rejecting. */
function downStore(synchronous: boolean): Store {
  const fail = (): never => {
    throw new FloodgateError('STORE_ERROR', 'the backend is down');
  };
  const failLater = (): Promise<never> => Promise.reject(new FloodgateError('STORE_ERROR', 'the backend is down'));
  return {
    bind: (): PolicyStore =>
      synchronous
        ? { synchronous: true, consume: fail, peek: fail, refund: fail, reset: fail }
        : { synchronous: false, consume: failLater, peek: failLater, refund: failLater, reset: failLater },
  };
}

type Options = Omit<LimiterOptions, 'clock' | 'store' | 'observer'>;

/**
 * Limiters of `options` on their own stores from `storeOf`, on one manual clock, each with the
 * decision events it reported: `one` decided by decideOne, `lone` by decideAll of it alone, and
 * `joint` by decideAll beside `spare`, a memory limit that a cost of 0 always passes. The joint
 * decision takes decideAll's path for several entries, which owes nothing to decideOne: its first
 * decision is the reference the two others must meet.
 */
function trio(storeOf: () => Store | undefined, options: Options) {
  const clock = new ManualClock(0);
  const make = (events: DecisionEvent[]): Limiter => {
    const store = storeOf();
    return new Limiter({
      ...options,
      clock,
      ...(store === undefined ? {} : { store }),
      observer: { decision: (e) => events.push(e) },
    });
  };
  const events = { one: [] as DecisionEvent[], lone: [] as DecisionEvent[], joint: [] as DecisionEvent[] };
  const limiters = { one: make(events.one), lone: make(events.lone), joint: make(events.joint) };
  const spare = new Limiter({ policy: fixedWindow({ limit: 1, windowMs: 1000 }), clock });
  const entry = (limiter: Limiter, key: unknown, cost: number | undefined) => ({
    limiter,
    key: key as string,
    ...(cost === undefined ? {} : { cost }),
  });
  const first = (joint: LimitsDecision | Promise<LimitsDecision>) =>
    joint instanceof Promise ? joint.then((j) => j.decisions[0]!) : joint.decisions[0]!;
  /** Each limiter's answer to a request of `cost` on `key`: a decision or a promise of one, or what it throws. */
  const decide = {
    one: (key: unknown, cost: number | undefined) => decideOne(limiters.one, key as string, cost),
    lone: (key: unknown, cost: number | undefined) => first(decideAll([entry(limiters.lone, key, cost)])),
    joint: (key: unknown, cost: number | undefined) =>
      first(decideAll([entry(limiters.joint, key, cost), { limiter: spare, key: 'spare', cost: 0 }])),
  };
  return { clock, ...limiters, events, decide };
}

/** The charges among `events`: their costs and decisions. */
const charges = (events: DecisionEvent[]): unknown[] =>
  events.filter((e) => e.operation === 'consume').map((e) => [e.cost, e.decision, e.atMs]);

const POLICY = { policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }) };
/** Steps at fixed times: [atMs, cost]. Cost 0 looks, 7 is above the limit, 6 and 5 drain it. */
const STEPS: readonly (readonly [number, number | undefined])[] = [
  [0, undefined],
  [0, 3],
  [0, 0],
  [0, 7],
  [0, 1],
  [0, 1],
  [0, 0],
  [500, 1],
  [1000, 1],
  [1000, 7],
  [9000, 5],
  [9000, 0],
];

/** What `answer` came to, or the code it failed with (thrown or rejected). */
async function outcome(answer: () => unknown): Promise<unknown> {
  try {
    return await answer();
  } catch (error) {
    return error instanceof FloodgateError ? error.code : error;
  }
}

describe('decideOne: one limit decided as decideAll decides it', () => {
  test('on the memory store: at once, the same decisions step by step, over the limit refused with Infinity', () => {
    const { clock, one, lone, joint, events, decide } = trio(() => undefined, POLICY);
    for (const [atMs, cost] of STEPS) {
      clock.set(atMs);
      const got = { one: decide.one('k', cost), lone: decide.lone('k', cost), joint: decide.joint('k', cost) };
      const where = `at ${atMs} ms, cost ${cost}`;
      assert.ok(!(got.one instanceof Promise) && !(got.lone instanceof Promise), `no promise: ${where}`);
      assert.deepEqual(got.one, got.joint, where);
      assert.deepEqual(got.lone, got.joint, where);
      if (cost === 7)
        assert.deepEqual([got.one.allowed, got.one.retryAfterMs, got.one.reason], [false, Infinity, 'limit']);
      const left = [one, lone, joint].map((l) => l.peekSync('k', { cost: 0 }).remaining);
      assert.deepEqual(left, [left[2], left[2], left[2]], `the same left: ${where}`);
    }
    assert.equal(charges(events.one).length, STEPS.length, 'each decision reported as a charge of its cost');
    assert.deepEqual(charges(events.one), charges(events.joint));
    assert.deepEqual(charges(events.lone), charges(events.joint));
  });

  test('on an asynchronous store: a promise of the same decisions step by step', async () => {
    const { clock, one, lone, joint, events, decide } = trio(laterStore, POLICY);
    for (const [atMs, cost] of STEPS) {
      clock.set(atMs);
      const got = { one: decide.one('k', cost), lone: decide.lone('k', cost), joint: decide.joint('k', cost) };
      const where = `at ${atMs} ms, cost ${cost}`;
      assert.ok(got.one instanceof Promise && got.lone instanceof Promise, `a promise: ${where}`);
      const [d, l, j] = await Promise.all([got.one, got.lone, got.joint]);
      assert.deepEqual(d, j, where);
      assert.deepEqual(l, j, where);
      if (cost === 7) assert.deepEqual([d.allowed, d.retryAfterMs, d.reason], [false, Infinity, 'limit']);
      const left = await Promise.all([one, lone, joint].map(async (x) => (await x.peek('k', { cost: 0 })).remaining));
      assert.deepEqual(left, [left[2], left[2], left[2]], `the same left: ${where}`);
    }
    assert.equal(charges(events.one).length, STEPS.length, 'each decision reported as a charge of its cost');
    assert.deepEqual(charges(events.one), charges(events.joint));
    assert.deepEqual(charges(events.lone), charges(events.joint));
  });

  test('a failing store: its failure policy answers alike, and what it lets through fails alike', async () => {
    for (const synchronous of [true, false]) {
      for (const onError of synchronous ? (['throw'] as const) : (['fail-open', 'fail-closed', 'throw'] as const)) {
        const { decide } = trio(() => downStore(synchronous), { ...POLICY, onError });
        for (const cost of [1, 0, 7]) {
          const where = `${synchronous ? 'synchronous' : 'asynchronous'} store, ${onError}, cost ${cost}`;
          const reference = await outcome(() => decide.joint('k', cost));
          assert.deepEqual(await outcome(() => decide.one('k', cost)), reference, where);
          assert.deepEqual(await outcome(() => decide.lone('k', cost)), reference, where);
          if (onError === 'throw') assert.equal(reference, 'STORE_ERROR', where);
          if (onError === 'fail-closed' && cost !== 7)
            assert.deepEqual([(reference as Decision).allowed, (reference as Decision).reason], [false, 'fail-closed']);
          if (synchronous) assert.throws(() => decide.one('k', cost), /the backend is down/, `at once: ${where}`);
        }
      }
    }
  });

  test('bad input fails as decideAll fails: a throw on the memory store, a rejection on an asynchronous one', async () => {
    for (const storeOf of [() => undefined, laterStore]) {
      const { one, lone, joint, decide } = trio(storeOf, POLICY);
      const cases: [unknown, number, string][] = [
        ['', 1, 'INVALID_KEY'],
        [undefined, 1, 'INVALID_KEY'],
        ['k', -1, 'INVALID_COST'],
        ['k', Number.NaN, 'INVALID_COST'],
      ];
      for (const [key, cost, code] of cases) {
        const where = `${one.table.synchronous ? 'memory' : 'asynchronous'} store, key ${String(key)}, cost ${cost}`;
        if (one.table.synchronous) {
          assert.throws(
            () => decide.one(key, cost),
            (e) => e instanceof FloodgateError && e.code === code,
            where,
          );
        } else {
          const answer = decide.one(key, cost);
          assert.ok(answer instanceof Promise, `it rejects, never throws: ${where}`);
          assert.equal(await outcome(() => answer), code, where);
        }
        assert.equal(await outcome(() => decide.joint(key, cost)), code, where);
        assert.equal(await outcome(() => decide.lone(key, cost)), code, where);
      }
      for (const l of [one, lone, joint]) l.close();
      for (const d of [decide.one, decide.lone, decide.joint])
        assert.equal(await outcome(() => d('k', 1)), 'LIMITER_CLOSED');
    }
    for (const notLimiter of [undefined, null, {}, { table: { synchronous: false } }]) {
      const answer = decideOne(notLimiter as never, 'k');
      assert.ok(answer instanceof Promise, 'no synchronous table: a rejection');
      assert.equal(await outcome(() => answer), 'INVALID_OPTION');
    }
    const lookAlike = { table: { synchronous: true } } as never;
    for (const call of [() => decideOne(lookAlike, 'k'), () => decideAll([{ limiter: lookAlike, key: 'k' }])])
      assert.throws(call, (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION', 'a look-alike throws');
  });

  test('on a fixed window across its edge: the same decisions, and cost 0 charges nothing', () => {
    const { clock, one, decide } = trio(() => undefined, { policy: fixedWindow({ limit: 2, windowMs: 1000 }) });
    const steps = [
      [0, 2],
      [999, 0],
      [999, 1],
      [1000, 0],
      [1000, 2],
      [1000, 3],
    ] as const;
    for (const [atMs, cost] of steps) {
      clock.set(atMs);
      const before = one.peekSync('k', { cost: 0 }).remaining;
      const got = decide.one('k', cost);
      assert.deepEqual(got, decide.joint('k', cost), `at ${atMs} ms, cost ${cost}`);
      if (cost === 0) assert.equal(one.peekSync('k', { cost: 0 }).remaining, before, 'nothing charged');
    }
  });
});
