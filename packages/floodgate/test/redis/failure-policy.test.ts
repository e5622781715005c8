import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  fixedWindow,
  gcra,
  slidingWindowLog,
  tokenBucket,
} from '../../src/index.js';
import { Circuit } from '../../src/stores/redis/circuit.js';
import { scaledPolicy } from '../../src/stores/redis/failure-policy.js';
import { RedisStore, type OnError, type RedisAdapter } from '../../src/stores/redis/index.js';

// The failure policies and the circuit, against adapters that fail on demand: no Redis needed.

/** switchable returns an adapter that hangs, fails or answers `reply` as `mode` says, counting calls. */
function switchable(reply: () => unknown = () => ['1', '0', '0', '0']): {
  adapter: RedisAdapter;
  calls: () => number;
  set: (mode: 'hang' | 'fail' | 'ok') => void;
} {
  let mode: 'hang' | 'fail' | 'ok' = 'ok';
  let calls = 0;
  const answer = (): Promise<unknown> => {
    calls++;
    if (mode === 'hang') return new Promise(() => {});
    if (mode === 'fail') return Promise.reject(new Error('Connection is closed.'));
    return Promise.resolve(reply());
  };
  return { adapter: { cluster: false, evalsha: answer, eval: answer }, calls: () => calls, set: (m) => (mode = m) };
}

const policy = fixedWindow({ limit: 4, windowMs: 60_000 });

/** table binds `policy` on a store over `adapter` whose time is `clock` (a fresh ManualClock by default). */
function table(
  adapter: RedisAdapter,
  onError: OnError,
  more: { timeoutMs?: number; probeIntervalMs?: number; clock?: ManualClock } = {},
): ReturnType<RedisStore['bind']> {
  const clock = more.clock ?? new ManualClock();
  return new RedisStore({ adapter, onError, maxBatchSize: 1, ...more, clock, timers: clock }).bind(policy);
}

describe('failure policies decide when Redis fails, and say so', () => {
  test('throw (the default) rejects with STORE_ERROR', async () => {
    const { adapter, set } = switchable();
    set('fail');
    await assert.rejects(
      table(adapter, 'throw').consume('a', 1, 0),
      (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_ERROR',
    );
  });

  test('fail-open admits, fail-closed refuses until the next probe', async () => {
    const { adapter, set } = switchable();
    set('fail');
    assert.deepEqual(await table(adapter, 'fail-open').consume('a', 1, 0), {
      allowed: true,
      limit: 4,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      reason: 'fail-open',
    });
    const clock = new ManualClock();
    const closedTable = table(adapter, 'fail-closed', { probeIntervalMs: 500, clock });
    const first = await closedTable.peek('a', 1, 0);
    assert.deepEqual(
      [first.allowed, first.reason, first.retryAfterMs],
      [false, 'fail-closed', 1],
      'one failure: the circuit is closed, Redis is tried again at once',
    );
    await closedTable.peek('a', 1, 0);
    await closedTable.peek('a', 1, 0);
    clock.advance(120);
    assert.equal((await closedTable.peek('a', 1, 0)).retryAfterMs, 380, 'open: until the next probe');
  });

  test('fail-closed while the probe is out: retryAfterMs runs to its deadline plus one interval', async () => {
    const { adapter, calls, set } = switchable();
    const clock = new ManualClock();
    const closed = table(adapter, 'fail-closed', { probeIntervalMs: 250, timeoutMs: 1000, clock });
    set('fail');
    for (let i = 0; i < 3; i++) await closed.consume('a', 1, 0);
    set('hang');
    clock.advance(250);
    const probe = closed.consume('a', 1, 0); // the probe, hung
    assert.equal(calls(), 4);
    clock.advance(100);
    const waiting = await closed.consume('a', 1, 0);
    assert.deepEqual(
      [waiting.allowed, waiting.reason, waiting.retryAfterMs],
      [false, 'fail-closed', 900 + 250],
      'the probe may fail at 1250, then one more interval',
    );
    clock.advance(900);
    const probed = await probe;
    assert.equal(probed.reason, 'fail-closed', 'the probe timed out');
    assert.equal(probed.retryAfterMs, 250);
    clock.advance(249);
    assert.equal((await closed.consume('a', 1, 0)).retryAfterMs, 1);
    assert.equal(calls(), 4, 'nothing sent before the stated time');
    clock.advance(1);
    set('ok');
    assert.equal(
      (await closed.consume('a', 1, 0)).reason,
      'ok',
      'at the stated time, the next probe is sent and answered',
    );
  });

  test('local fallback admits its share of the limit, from a fresh state each outage', async () => {
    const { adapter, set } = switchable();
    const clock = new ManualClock();
    const t = table(adapter, { fallback: 'local', share: 0.5 }, { probeIntervalMs: 20, clock });
    set('fail');
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await t.consume('a', 1, 1000));
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.reason, d.limit]),
      [
        [true, 'fallback', 4],
        [true, 'fallback', 4],
        [false, 'fallback', 4],
        [false, 'fallback', 4],
      ],
    );
    assert.equal((await t.consume('a', 3, 1000)).allowed, false, 'a cost above the local share is refused');
    set('ok');
    clock.advance(20);
    assert.equal((await t.consume('a', 1, 1000)).reason, 'ok', 'the probe got an answer');
  });

  test('scaled policies keep windows and scale limits and rates', () => {
    assert.equal(scaledPolicy(tokenBucket({ capacity: 10, refillPerSecond: 4 }), 0.5).params.refillPerSecond, 2);
    assert.equal(scaledPolicy(slidingWindowLog({ limit: 3, windowMs: 1000 }), 0.25).limit, 1);
    assert.equal(scaledPolicy(gcra({ rate: 10, periodMs: 1000, maxBurst: 9 }), 0.5).limit, 5);
  });

  test('a failed refund resolves under a policy; a failed reset still rejects', async () => {
    const { adapter, set } = switchable();
    set('fail');
    const t = table(adapter, 'fail-open');
    await t.refund('a', 1, 0);
    await assert.rejects(t.reset('a'), (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_ERROR');
  });

  test('reserve: open admits now, closed refuses', async () => {
    const { adapter, set } = switchable();
    set('fail');
    const bucket = tokenBucket({ capacity: 2, refillPerSecond: 1 });
    assert.equal(await new RedisStore({ adapter, onError: 'fail-open' }).bind(bucket).reserve!('a', 1, 0, 100), 0);
    assert.equal(await new RedisStore({ adapter, onError: 'fail-closed' }).bind(bucket).reserve!('a', 1, 0, 100), -1);
  });

  test('bad input still throws, whatever the policy', async () => {
    const { adapter } = switchable();
    const t = new RedisStore({ adapter, onError: 'fail-open', maxKeyLength: 4 }).bind(policy);
    await assert.rejects(
      t.consume('a', 5, 0),
      (e: unknown) => e instanceof FloodgateError && e.code === 'COST_EXCEEDS_LIMIT',
    );
    await assert.rejects(
      t.refund('too long', 1, 0),
      (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_KEY',
    );
  });

  test('a hung Redis is decided by the policy at timeoutMs, on one timer', async () => {
    const { adapter, set } = switchable();
    set('hang');
    const clock = new ManualClock();
    const t = table(adapter, 'fail-closed', { timeoutMs: 100, clock });
    let settled = 0;
    const decisions = Array.from({ length: 100 }, (_, i) => t.consume(`k${i}`, 1, 0).then((d) => (settled++, d)));
    assert.equal(clock.timerCount(), 1);
    clock.advance(99);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, 0, 'nothing decided before the deadline');
    clock.advance(1);
    assert.ok((await Promise.all(decisions)).every((d) => d.reason === 'fail-closed'));
    assert.equal(clock.timerCount(), 0, 'no timer left once nothing is in flight');
  });

  test('options are checked', () => {
    const { adapter } = switchable();
    for (const onError of [
      'open',
      { fallback: 'local', share: 0 },
      { fallback: 'local', share: 1.5 },
      { fallback: 'remote', share: 0.5 },
    ]) {
      assert.throws(() => new RedisStore({ adapter, onError: onError as OnError }), /RedisStore.onError must be/);
    }
    assert.throws(() => new RedisStore({ adapter, failuresToOpen: 0 }), /RedisStore.failuresToOpen/);
    assert.throws(() => new RedisStore({ adapter, overLimitCacheMaxKeys: -1 }), /RedisStore.overLimitCacheMaxKeys/);
    assert.throws(() => new RedisStore({ adapter }).withOnError('nope' as OnError), /RedisStore.withOnError/);
  });

  test('withOnError: one connection, a policy per limiter', async () => {
    const { adapter, set } = switchable();
    const store = new RedisStore({ adapter, maxBatchSize: 1 });
    set('fail');
    assert.equal(
      (await Promise.resolve(store.withOnError('fail-open').bind(policy).consume('a', 1, 0))).reason,
      'fail-open',
    );
    assert.equal((await store.withOnError('fail-closed').bind(policy).consume('a', 1, 0)).reason, 'fail-closed');
    await assert.rejects(Promise.resolve(store.withOnError('throw').bind(policy).consume('a', 1, 0)));
    assert.equal(
      (await store.bind(policy).consume('a', 1, 0)).reason,
      'fallback',
      "the store's default is the bounded local fallback",
    );
  });
});

describe('the circuit stops sending while Redis is away', () => {
  test('after failuresToOpen failures nothing is sent; one probe per interval; an answer closes it', async () => {
    const { adapter, calls, set } = switchable();
    const clock = new ManualClock();
    // writeBack off: this counts the circuit's sends alone (the write-back has tests of its own).
    const t = new RedisStore({
      adapter,
      onError: 'fail-open',
      writeBack: false,
      failuresToOpen: 3,
      probeIntervalMs: 50,
      maxBatchSize: 1,
      clock,
      timers: clock,
    }).bind(policy);
    set('fail');
    for (let i = 0; i < 100; i++) assert.equal((await t.consume('a', 1, 0)).reason, 'fail-open');
    assert.equal(calls(), 3, 'three failures, then nothing sent');
    clock.advance(49);
    await t.consume('a', 1, 0);
    assert.equal(calls(), 3, 'no probe before the interval');
    clock.advance(1);
    await Promise.all(Array.from({ length: 10 }, () => t.consume('a', 1, 0)));
    assert.equal(calls(), 4, 'one probe');
    set('ok');
    clock.advance(50);
    assert.equal((await t.consume('a', 1, 0)).reason, 'ok', 'the probe got an answer');
    assert.equal((await t.consume('a', 1, 0)).reason, 'ok');
    assert.equal(calls(), 6);
  });

  test('a table of steps at fixed times', () => {
    const clock = new ManualClock();
    const circuit = new Circuit({ failuresToOpen: 2, probeIntervalMs: 100, probeTimeoutMs: 30, clock });
    const steps: Array<[number, () => unknown, unknown]> = [
      [0, () => circuit.admit(), 'send'],
      [0, () => circuit.failed(false), undefined],
      [0, () => circuit.admit(), 'send'],
      [10, () => circuit.failed(false), undefined],
      [10, () => circuit.admit(), 'refuse'],
      [60, () => circuit.retryInMs(), 50],
      [110, () => circuit.admit(), 'probe'],
      [110, () => circuit.admit(), 'refuse'],
      [115, () => circuit.retryInMs(), 125],
      [120, () => circuit.failed(true), undefined],
      [200, () => circuit.admit(), 'refuse'],
      [220, () => circuit.admit(), 'probe'],
      [230, () => circuit.succeeded(true), undefined],
      [230, () => circuit.admit(), 'send'],
      [230, () => circuit.retryInMs(), 0],
    ];
    for (const [atMs, step, expected] of steps) {
      clock.set(atMs);
      assert.equal(step(), expected, `at ${atMs} ms`);
    }
  });
});

describe('a Limiter over Redis reads no local clock until it must fall back', () => {
  test('the local fallback decides on the system clock when the Limiter passed none', async () => {
    const { adapter, set } = switchable();
    const store = new RedisStore({ adapter, onError: { fallback: 'local', share: 0.5 }, maxBatchSize: 1 });
    const limiter = new Limiter({ policy, store });
    assert.equal(store.bind(policy).ownsClock, true);
    set('fail');
    const first = await limiter.consume('a');
    const second = await limiter.consume('a');
    const third = await limiter.consume('a');
    // Half of 4 per minute: two admitted, then a refusal with a finite wait of at most the window.
    assert.deepEqual([first.reason, first.allowed, second.allowed, third.allowed], ['fallback', true, true, false]);
    assert.equal(second.remaining, 0);
    assert.ok(
      Number.isFinite(third.retryAfterMs) && third.retryAfterMs > 0 && third.retryAfterMs <= 60_000,
      `retryAfterMs ${third.retryAfterMs}`,
    );
  });

  test("in test mode the table wants the caller's time", () => {
    const { adapter } = switchable();
    assert.equal(new RedisStore({ adapter, unsafeTestTime: true }).bind(policy).ownsClock, false);
  });
});
