import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  fixedWindow,
  tokenBucket,
  type Decision,
  type PolicyStore,
  type Store,
  type StoreErrorEvent,
} from '../src/index.js';

/** Every unhandled rejection seen while these tests run: there must be none. */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
before(() => process.on('unhandledRejection', onUnhandled));
after(async () => {
  await nextTurn();
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, [], 'no unhandled rejection');
});

type Mode =
  | { kind: 'reject'; error: () => unknown }
  | { kind: 'hang' }
  | { kind: 'throw'; error: () => unknown }
  | { kind: 'ok' };

/** A custom asynchronous store over a memory store, whose calls fail as `mode` says (changeable). */
function flakyStore(mode: { current: Mode }): Store & { late: Array<(d?: unknown) => void> } {
  const inner = new MemoryStore();
  const late: Array<(d?: unknown) => void> = [];
  const call = <T>(run: () => T): Promise<T> => {
    const m = mode.current;
    if (m.kind === 'ok') return Promise.resolve().then(run);
    if (m.kind === 'reject') return Promise.reject(m.error() as Error);
    if (m.kind === 'throw') throw m.error();
    // Never answers, until the test lets it answer (late) or fail (late).
    return new Promise<T>((resolve, reject) =>
      late.push((failure) => (failure === undefined ? resolve(run()) : reject(failure as Error))),
    );
  };
  return {
    late,
    bind(algorithm): PolicyStore {
      const table = inner.bind(algorithm);
      return {
        synchronous: false,
        consume: (k, c, t) => call(() => table.consume(k, c, t)),
        peek: (k, c, t) => call(() => table.peek(k, c, t)),
        refund: (k, c, t) => call(() => table.refund(k, c, t)),
        reset: (k) => call(() => table.reset(k)),
        reserve: (k, c, t, w) => call(() => table.reserve!(k, c, t, w)),
      };
    },
  };
}

function setup(mode: Mode, options: { onError?: 'fail-open' | 'fail-closed' | 'throw'; timeoutMs?: number } = {}) {
  const clock = new ManualClock(10_000);
  const state = { current: mode };
  const store = flakyStore(state);
  const events: StoreErrorEvent[] = [];
  const limiter = new Limiter({
    policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
    store,
    clock,
    observer: { storeError: (e) => void events.push(e) },
    ...options,
  });
  return { clock, state, store, events, limiter };
}

const code =
  (c: string) =>
  (e: unknown): boolean =>
    e instanceof FloodgateError && e.code === c;

describe("a custom store that fails: the limiter's onError answers", () => {
  test('fail-open is the default: a plain Error admits with reason fail-open, reported as a typed STORE_ERROR', async () => {
    const { limiter, events } = setup({ kind: 'reject', error: () => new Error('connection refused') });
    const d = await limiter.consume('k');
    assert.deepEqual(d, { allowed: true, limit: 5, remaining: 0, retryAfterMs: 0, resetMs: 0, reason: 'fail-open' });
    assert.equal((await limiter.peek('k')).reason, 'fail-open');
    assert.equal(events.length, 2);
    assert.equal(events[0]!.policy, 'fail-open');
    assert.equal(events[0]!.atMs, 10_000);
    assert.ok(code('STORE_ERROR')(events[0]!.error));
    assert.equal((events[0]!.error.cause as Error).message, 'connection refused');
  });

  test('fail-closed refuses with reason fail-closed and a retryAfterMs; a FloodgateError keeps its code', async () => {
    const { limiter, events } = setup(
      { kind: 'reject', error: () => new FloodgateError('STORE_REPLY', 'odd reply') },
      { onError: 'fail-closed' },
    );
    assert.deepEqual(await limiter.consume('k'), {
      allowed: false,
      limit: 5,
      remaining: 0,
      retryAfterMs: 1000,
      resetMs: 0,
      reason: 'fail-closed',
    });
    assert.ok(code('STORE_REPLY')(events[0]!.error));
  });

  test('throw rejects with the typed error; a store that throws synchronously, or rejects with a non-Error, is a failure too', async () => {
    const { limiter, state } = setup({ kind: 'throw', error: () => new Error('boom') }, { onError: 'throw' });
    await assert.rejects(limiter.consume('k'), code('STORE_ERROR'));
    state.current = { kind: 'reject', error: () => 'a string' };
    await assert.rejects(limiter.consume('k'), (e) => code('STORE_ERROR')(e) && /a string/.test((e as Error).message));
  });

  test('bad input from the store passes through as it is, whatever onError says', async () => {
    const { limiter, events } = setup({ kind: 'reject', error: () => new FloodgateError('INVALID_COST', 'bad cost') });
    await assert.rejects(limiter.consume('k'), code('INVALID_COST'));
    assert.equal(events.length, 0);
  });

  test('refund on failure resolves (the charge stays until it refills); reset rejects whatever the policy', async () => {
    const { limiter } = setup({ kind: 'reject', error: () => new Error('down') });
    await limiter.refund('k', 1);
    await assert.rejects(limiter.reset('k'), code('STORE_ERROR'));
  });

  test('acquire on a failing store: fail-open admits, fail-closed refuses with a typed error, never hangs', async () => {
    const open = setup({ kind: 'reject', error: () => new Error('down') });
    await open.limiter.acquire('k');
    const closed = setup({ kind: 'reject', error: () => new Error('down') }, { onError: 'fail-closed' });
    await assert.rejects(closed.limiter.acquire('k', { maxWaitMs: 100 }), (e) => e instanceof FloodgateError);
  });
});

describe('a custom store that never answers: the deadline cuts it off on the injected timers', () => {
  test('timeoutMs (default adaptive: its 250 ms cap before any answer) on the manual clock: fail-open at the deadline, not a millisecond before', async () => {
    const { limiter, clock, store, events } = setup({ kind: 'hang' });
    const answers: Decision[] = [];
    void limiter.consume('k').then((d) => answers.push(d));
    clock.advance(249);
    await nextTurn();
    assert.equal(answers.length, 0);
    clock.advance(1);
    await nextTurn();
    assert.equal(answers[0]?.reason, 'fail-open');
    assert.ok(code('STORE_TIMEOUT')(events[0]!.error));
    assert.equal(clock.timerCount(), 0, 'no timer left once nothing is pending');
    store.late.shift()!(); // the store's late answer is dropped
    await nextTurn();
    assert.deepEqual(
      answers.map((d) => d.reason),
      ['fail-open'],
      'one answer only',
    );
  });

  test('throw rejects with STORE_TIMEOUT; a late rejection after the deadline is never unhandled', async () => {
    const { limiter, clock, store } = setup({ kind: 'hang' }, { onError: 'throw', timeoutMs: 50 });
    const pending = assert.rejects(limiter.consume('k'), code('STORE_TIMEOUT'));
    clock.advance(50);
    await pending;
    store.late.shift()!(new Error('late failure'));
    await nextTurn();
  });

  test('one timer for all pending calls; each is cut off at its own deadline; answers in time win', async () => {
    const { limiter, clock, store } = setup({ kind: 'hang' }, { onError: 'fail-closed', timeoutMs: 100 });
    const answers: Array<string | undefined> = [];
    for (let i = 0; i < 100; i++) {
      answers.push(undefined);
      void limiter.consume(`k${i}`).then((d) => (answers[i] = d.reason));
      clock.advance(1);
    }
    assert.equal(clock.timerCount(), 1);
    store.late[99]!(); // the last one answers in time
    await nextTurn();
    assert.equal(answers[99], 'ok');
    clock.advance(1); // t = 101 after the first call: the first two deadlines have passed
    await nextTurn();
    assert.deepEqual(answers.slice(0, 3), ['fail-closed', 'fail-closed', undefined]);
    clock.advance(200);
    await nextTurn();
    assert.equal(answers.filter((a) => a === 'fail-closed').length, 99);
    assert.equal(clock.timerCount(), 0);
  });
});

describe('stores that decide failures themselves', () => {
  const deciding = (): Store => {
    const inner = new MemoryStore();
    return {
      bind: (algorithm) => {
        const table = inner.bind(algorithm);
        return {
          synchronous: false,
          decidesFailures: true,
          consume: async (k, c, t) => table.consume(k, c, t),
          peek: async (k, c, t) => table.peek(k, c, t),
          refund: async (k, c, t) => table.refund(k, c, t),
          reset: async (k) => table.reset(k),
        };
      },
    };
  };

  test("refuse the limiter's onError and timeoutMs (no failure is decided twice), and are not wrapped", () => {
    const policy = fixedWindow({ limit: 3, windowMs: 1000 });
    const store = deciding();
    assert.throws(
      () => new Limiter({ policy, store, onError: 'fail-closed' }),
      (e) => e instanceof FloodgateError && e.option === 'Limiter.onError',
    );
    assert.throws(
      () => new Limiter({ policy, store, timeoutMs: 10 }),
      (e) => e instanceof FloodgateError && e.option === 'Limiter.timeoutMs',
    );
    const limiter = new Limiter({ policy, store });
    assert.equal(limiter.table.decidesFailures, true, "the store's own table, not wrapped");
  });

  test('bad options are typed errors', () => {
    const policy = fixedWindow({ limit: 3, windowMs: 1000 });
    for (const [options, option] of [
      [{ onError: 'open' }, 'Limiter.onError'],
      [{ timeoutMs: 0 }, 'Limiter.timeoutMs'],
      [{ timeoutMs: NaN }, 'Limiter.timeoutMs'],
      [{ name: '' }, 'Limiter.name'],
      [{ observer: 3 }, 'Limiter.observer'],
      [{ reportKeys: 'yes' }, 'Limiter.reportKeys'],
    ] as const) {
      assert.throws(
        () => new Limiter({ policy, ...(options as object) }),
        (e) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === option,
      );
    }
  });
});
