import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Limiter,
  ManualClock,
  MemoryStore,
  fixedWindow,
  slidingWindowCounter,
  slidingWindowLog,
} from '../../src/index.js';
import { asyncStore, flush, runAll, runUntil, track, type Outcome } from './support.js';

const admittedAt = (atMs: number): Outcome => ({ kind: 'admitted', atMs });
const failedAt = (code: string, atMs: number): Outcome => ({ kind: 'failed', code, atMs });

function fixed(limit: number, windowMs: number, maxQueue?: number) {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy: fixedWindow({ limit, windowMs }), clock, maxQueue });
  return { clock, limiter };
}

describe('acquire on a window policy (no booking)', () => {
  test('the head retries when the window allows; those behind follow at once while it does', async () => {
    const { clock, limiter } = fixed(2, 1000);
    const waiters = [0, 1, 2, 3, 4].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [0, 0, 1000, 1000, 2000].map(admittedAt),
    );
  });

  test('one timer for the line, whatever its length', async () => {
    const { clock, limiter } = fixed(1, 1000);
    for (let i = 0; i < 50; i++) void limiter.acquire('k');
    assert.equal(clock.timerCount(), 1);
    await runAll(clock);
    assert.equal(clock.timerCount(), 0);
  });

  test('a caller whose deadline comes before the next try is refused as soon as that is known', async () => {
    const { clock, limiter } = fixed(1, 1000);
    const head = track(clock, limiter.acquire('k')); // admitted at 0
    const second = track(clock, limiter.acquire('k', { maxWaitMs: 1500 })); // next try 1000: fits
    const hopeless = track(clock, limiter.acquire('k', { maxWaitMs: 500 })); // before the next try: refused now
    const third = track(clock, limiter.acquire('k', { maxWaitMs: 1800 })); // fits 1000, not 2000
    await flush();
    assert.deepEqual(hopeless.outcome, failedAt('WAIT_TIMEOUT', 0));
    await runAll(clock);
    assert.deepEqual(
      [head.outcome, second.outcome, third.outcome],
      [admittedAt(0), admittedAt(1000), failedAt('WAIT_TIMEOUT', 1000)],
      'the third is refused at 1000, when the refusal moves the next try to 2000, not at its deadline',
    );
  });

  test('the first caller is refused at once when the window reopens after its maxWaitMs', async () => {
    const { clock, limiter } = fixed(1, 1000);
    await limiter.acquire('k');
    const late = track(clock, limiter.acquire('k', { maxWaitMs: 999 }));
    await flush();
    assert.deepEqual(late.outcome, failedAt('WAIT_TIMEOUT', 0));
    assert.equal(clock.timerCount(), 0);
  });

  test('when the head leaves, the next caller tries at once', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: slidingWindowLog({ limit: 3, windowMs: 1000 }), clock });
    await limiter.acquire('k', { cost: 2 }); // 1 left until 1000
    const controller = new AbortController();
    const big = track(clock, limiter.acquire('k', { cost: 2, signal: controller.signal }));
    const small = track(clock, limiter.acquire('k', { cost: 1 }));
    await runUntil(clock, 400);
    assert.equal(small.outcome.kind, 'pending', 'no overtaking while the head waits');
    controller.abort();
    await flush();
    assert.deepEqual([big.outcome, small.outcome], [failedAt('ABORTED', 400), admittedAt(400)]);
  });

  test('maxQueue bounds the line; 0 means pass now or be refused', async () => {
    const { clock, limiter } = fixed(1, 1000, 1);
    const outcomes = [0, 1, 2].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      outcomes.map((w) => w.outcome),
      [admittedAt(0), admittedAt(1000), failedAt('QUEUE_FULL', 0)],
    );
    const none = fixed(1, 1000, 0);
    const [pass, refused] = [0, 1].map(() => track(none.clock, none.limiter.acquire('k')));
    await flush();
    assert.deepEqual([pass!.outcome, refused!.outcome], [admittedAt(0), failedAt('QUEUE_FULL', 0)]);
  });

  test('capacity taken by consume() outside the line makes the head try again later', async () => {
    const policy = fixedWindow({ limit: 1, windowMs: 1000 });
    const store = new MemoryStore();
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy, store, clock });
    // Another limiter on the same store, whose clock is ahead: it takes the next window first.
    const other = new Limiter({ policy, store, clock: new ManualClock(1000) });
    await limiter.acquire('k');
    const waiter = track(clock, limiter.acquire('k'));
    assert.equal(other.consumeSync('k').allowed, true);
    await runAll(clock);
    assert.deepEqual(waiter.outcome, admittedAt(2000));
  });

  test('sliding window counter: waiters get through as its estimate allows', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: slidingWindowCounter({ limit: 2, windowMs: 1000 }), clock });
    const waiters = [0, 1, 2, 3, 4, 5].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    const times = waiters.map((w) => (w.outcome.kind === 'admitted' ? w.outcome.atMs : -1));
    assert.deepEqual(times.slice(0, 2), [0, 0]);
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! >= times[i - 1]!, 'in order');
    assert.ok(times[5]! >= 2000, 'no more than the policy admits');
  });

  test('asynchronous store: the same line', async () => {
    const clock = new ManualClock(0);
    const limiter = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 1000 }), clock, store: asyncStore() });
    const waiters = [0, 1, 2, 3, 4].map(() => track(clock, limiter.acquire('k')));
    await runAll(clock);
    assert.deepEqual(
      waiters.map((w) => w.outcome),
      [0, 0, 1000, 1000, 2000].map(admittedAt),
    );
  });
});
