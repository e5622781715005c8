import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { FloodgateError, Limiter, ManualClock, gcra, tokenBucket, type Store } from '../../src/index.js';
import { asyncStore, flush, runAll, runUntil, track, type Outcome } from './support.js';

function setup(options: {
  capacity: number;
  refillPerSecond: number;
  maxQueue?: number;
  store?: Store;
  startMs?: number;
}) {
  const clock = new ManualClock(options.startMs ?? 0);
  const policy = tokenBucket({ capacity: options.capacity, refillPerSecond: options.refillPerSecond });
  const limiter = new Limiter({ policy, clock, maxQueue: options.maxQueue, store: options.store });
  return { clock, limiter };
}

const admittedAt = (atMs: number): Outcome => ({ kind: 'admitted', atMs });
const failedAt = (code: string, atMs: number): Outcome => ({ kind: 'failed', code, atMs });

describe('acquire on a policy that books the future', () => {
  test('callers are admitted at their booked slots, in arrival order', async () => {
    const { clock, limiter } = setup({ capacity: 2, refillPerSecond: 10 });
    const waiters = [0, 1, 2, 3, 4].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [0, 0, 100, 200, 300].map(admittedAt),
    );
  });

  test('a cost books that many units: bigger requests delay those behind them', async () => {
    const { clock, limiter } = setup({ capacity: 4, refillPerSecond: 4 });
    const steps = [
      track(clock, limiter.acquire('k', { cost: 4 })), // the whole bucket, now
      track(clock, limiter.acquire('k', { cost: 2 })), // 2 units: 500 ms
      track(clock, limiter.acquire('k', { cost: 0.5 })), // then half a unit: 125 ms more
      track(clock, limiter.acquire('k', { cost: 0 })), // nothing, but not before those ahead
    ];
    await runAll(clock);
    assert.deepEqual(
      steps.map((w) => w.outcome),
      [0, 500, 625, 625].map(admittedAt),
    );
  });

  test('a wait longer than maxWaitMs fails at once and books nothing', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const first = track(clock, limiter.acquire('k'));
    const second = track(clock, limiter.acquire('k', { maxWaitMs: 999 }));
    const third = track(clock, limiter.acquire('k', { maxWaitMs: 1000 }));
    await flush();
    assert.deepEqual(second.outcome, failedAt('WAIT_TIMEOUT', 0));
    assert.match((second.error as Error).message, /maxWaitMs \(999 ms\)/);
    await runAll(clock);
    assert.deepEqual([first.outcome, third.outcome], [admittedAt(0), admittedAt(1000)]);
  });

  test('maxWaitMs 0 admits now or fails now', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const now = track(clock, limiter.acquire('k', { maxWaitMs: 0 }));
    const never = track(clock, limiter.acquire('k', { maxWaitMs: 0 }));
    await flush();
    assert.deepEqual([now.outcome, never.outcome], [admittedAt(0), failedAt('WAIT_TIMEOUT', 0)]);
    assert.equal(clock.timerCount(), 0);
  });

  test('maxQueue: a caller first tries to pass, then queues, and is refused at once when the line is full', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1, maxQueue: 2 });
    const outcomes = [0, 1, 2, 3].map(() => track(clock, limiter.acquire('k')));
    await flush();
    assert.deepEqual(outcomes[3]!.outcome, failedAt('QUEUE_FULL', 0));
    await runAll(clock);
    assert.deepEqual(
      outcomes.slice(0, 3).map((w) => w.outcome),
      [0, 1000, 2000].map(admittedAt),
    );
  });

  test('maxQueue 0: nobody waits; those who can pass, pass', async () => {
    const { clock, limiter } = setup({ capacity: 2, refillPerSecond: 1, maxQueue: 0 });
    const outcomes = [0, 1, 2].map(() => track(clock, limiter.acquire('k')));
    await runUntil(clock, 1000);
    outcomes.push(track(clock, limiter.acquire('k')));
    await flush();
    assert.deepEqual(
      outcomes.map((w) => w.outcome),
      [admittedAt(0), admittedAt(0), failedAt('QUEUE_FULL', 0), admittedAt(1000)],
    );
  });

  test('an aborted waiter fails with ABORTED, its reason as cause, and gives its slot to those behind', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const controller = new AbortController();
    const head = track(clock, limiter.acquire('k'));
    const leaving = track(clock, limiter.acquire('k', { signal: controller.signal }));
    const behind = track(clock, limiter.acquire('k'));
    await runUntil(clock, 300);
    const reason = new Error('client went away');
    controller.abort(reason);
    await flush();
    assert.deepEqual(leaving.outcome, failedAt('ABORTED', 300));
    assert.ok(leaving.error instanceof FloodgateError);
    assert.equal((leaving.error as FloodgateError).cause, reason);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'listener removed');
    await runAll(clock);
    assert.deepEqual([head.outcome, behind.outcome], [admittedAt(0), admittedAt(1000)]);
    // At 1000 the last admission emptied the bucket; had the aborted caller been charged, it would take 2000.
    assert.equal((await limiter.peek('k')).retryAfterMs, 1000, 'the aborted caller was never charged');
  });

  test('a newcomer never overtakes the line, even when a departure frees capacity', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const controller = new AbortController();
    track(clock, limiter.acquire('k'));
    const leaving = track(clock, limiter.acquire('k', { signal: controller.signal })); // due 1000
    const second = track(clock, limiter.acquire('k')); // due 2000, moves to 1000
    await runUntil(clock, 100);
    controller.abort();
    const newcomer = track(clock, limiter.acquire('k'));
    await runAll(clock);
    assert.equal(leaving.outcome.kind, 'failed');
    assert.deepEqual([second.outcome, newcomer.outcome], [admittedAt(1000), admittedAt(2000)]);
  });

  test('a signal already aborted fails at once and charges nothing', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const reason = new Error('gone');
    const outcome = track(clock, limiter.acquire('k', { signal: AbortSignal.abort(reason) }));
    await flush();
    assert.deepEqual(outcome.outcome, failedAt('ABORTED', 0));
    assert.equal((outcome.error as Error).cause, reason);
    assert.equal(limiter.peekSync('k').allowed, true);
  });

  test('a signal that fires after admission changes nothing and leaves no listener', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1 });
    const controller = new AbortController();
    track(clock, limiter.acquire('k'));
    const waiter = track(clock, limiter.acquire('k', { signal: controller.signal }));
    await runAll(clock);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    controller.abort();
    await flush();
    assert.deepEqual(waiter.outcome, admittedAt(1000));
  });

  test('one timer per key with waiters, none once they are served', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 100 });
    for (let i = 0; i < 100; i++) for (const key of ['a', 'b', 'c']) void limiter.acquire(key);
    assert.equal(clock.timerCount(), 3);
    await runAll(clock);
    assert.equal(clock.timerCount(), 0);
  });

  test('GCRA: bursts of maxBurst + 1, then one per emission interval', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 2 }), clock });
    const waiters = [0, 1, 2, 3, 4].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [0, 0, 0, 100, 200].map(admittedAt),
    );
  });

  test('a clock set back does not admit anyone early', async () => {
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1, startMs: 10_000 });
    track(clock, limiter.acquire('k'));
    const waiter = track(clock, limiter.acquire('k')); // due at 11,000
    clock.set(5_000);
    await runUntil(clock, 10_999);
    assert.equal(waiter.outcome.kind, 'pending');
    await runUntil(clock, 11_000);
    assert.deepEqual(waiter.outcome, admittedAt(11_000));
  });

  test('waits past 2^31 - 1 ms are kept (one timer, fired on time)', async () => {
    const dayMs = 86_400_000;
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 / (30 * 86_400) }), clock });
    track(clock, limiter.acquire('k'));
    const waiter = track(clock, limiter.acquire('k'));
    await runAll(clock);
    assert.deepEqual(waiter.outcome, admittedAt(30 * dayMs));
  });

  test('bad input rejects the promise (never throws) with a typed error', async () => {
    const { limiter } = setup({ capacity: 2, refillPerSecond: 1 });
    const codes = async (promise: Promise<void>): Promise<string> =>
      promise.then(
        () => 'ok',
        (e: FloodgateError) => e.code,
      );
    assert.equal(await codes(limiter.acquire('k', { cost: 3 })), 'COST_EXCEEDS_LIMIT');
    assert.equal(await codes(limiter.acquire('k', { cost: -1 })), 'INVALID_COST');
    assert.equal(await codes(limiter.acquire('k', { maxWaitMs: -1 })), 'INVALID_OPTION');
    assert.equal(await codes(limiter.acquire('k', { maxWaitMs: Number.NaN })), 'INVALID_OPTION');
    assert.equal(await codes(limiter.acquire('k', { signal: {} as AbortSignal })), 'INVALID_OPTION');
    void limiter.acquire('k', { cost: 2 });
    void limiter.acquire('k', { cost: 2 }); // a line forms
    assert.equal(await codes(limiter.acquire('k', { cost: 3 })), 'COST_EXCEEDS_LIMIT', 'checked before queueing too');
  });

  test('Limiter options: maxQueue and timers are checked', () => {
    const policy = tokenBucket({ capacity: 1, refillPerSecond: 1 });
    for (const maxQueue of [-1, 1.5, Number.NaN, '3']) {
      assert.throws(() => new Limiter({ policy, maxQueue: maxQueue as number }), {
        code: 'INVALID_OPTION',
        option: 'Limiter.maxQueue',
      });
    }
    assert.throws(() => new Limiter({ policy, timers: {} as never }), {
      code: 'INVALID_OPTION',
      option: 'Limiter.timers',
    });
    assert.doesNotThrow(() => new Limiter({ policy, maxQueue: Infinity }));
  });
});

describe('acquire on an asynchronous store', () => {
  test('callers that arrive before the store answers line up in order', async () => {
    const store = asyncStore();
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1, store });
    const waiters = [0, 1, 2].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [0, 1000, 2000].map(admittedAt),
    );
  });

  test('a caller that aborts while its booking is in flight is refunded when it lands', async () => {
    const store = asyncStore();
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1, store });
    const controller = new AbortController();
    const first = track(clock, limiter.acquire('k'));
    const leaving = track(clock, limiter.acquire('k', { signal: controller.signal }));
    const last = track(clock, limiter.acquire('k'));
    controller.abort(); // before any answer
    await runAll(clock);
    assert.deepEqual(
      [first.outcome, leaving.outcome, last.outcome],
      [admittedAt(0), failedAt('ABORTED', 0), admittedAt(1000)],
    );
    assert.equal((await limiter.peek('k')).retryAfterMs, 1000, 'nothing charged for the aborted caller');
  });

  test('unit costs: a departure from the middle hands the slots over with one refund', async () => {
    const store = asyncStore();
    const { clock, limiter } = setup({ capacity: 1, refillPerSecond: 1, store });
    const controllers = [0, 1, 2, 3, 4].map(() => new AbortController());
    const waiters = controllers.map((c) => track(clock, limiter.acquire('k', { signal: c.signal })));
    await flush();
    const callsBefore = store.tables[0]!.calls;
    controllers[1]!.abort();
    await flush();
    assert.equal(store.tables[0]!.calls - callsBefore, 1, 'one refund, no booking again');
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [admittedAt(0), failedAt('ABORTED', 0), admittedAt(1000), admittedAt(2000), admittedAt(3000)],
    );
  });

  test('a store failure rejects the caller it was for with that error', async () => {
    const clock = new ManualClock(0);
    const failure = new Error('connection reset');
    const store: Store = {
      bind: () => ({
        synchronous: false,
        consume: () => Promise.reject(failure),
        peek: () => Promise.reject(failure),
        refund: () => Promise.resolve(),
        reset: () => Promise.resolve(),
        reserve: () => Promise.reject(failure),
      }),
    };
    const limiter = new Limiter({
      policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }),
      store,
      clock,
      onError: 'throw',
    });
    await assert.rejects(
      limiter.acquire('k'),
      (e) => e instanceof FloodgateError && e.code === 'STORE_ERROR' && e.cause === failure,
    );
    assert.equal(clock.timerCount(), 0);
  });
});
