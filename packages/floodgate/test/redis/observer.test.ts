import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock, fixedWindow, type Clock, type Observer } from '../../src/index.js';
import {
  BATCH_SCRIPT,
  CONSUME_ALL_SCRIPT,
  RedisStore,
  hashSlotOf,
  type OnError,
  type RedisAdapter,
} from '../../src/stores/redis/index.js';

// The store's events, on the manual clock: one storeCall per round trip, storeError with the policy
// applied, circuit changes (per node on a cluster), fallback on and off. No Redis needed.

type Mode = 'ok' | 'fail' | 'hang';

/** timedAdapter answers each script `delayMs` later on `clock` (or fails, or hangs), counting calls. */
function timedAdapter(
  clock: ManualClock,
  delayMs: number,
  cluster = false,
): { adapter: RedisAdapter; set: (mode: Mode) => void; calls: () => number } {
  let mode: Mode = 'ok';
  let calls = 0;
  const answer = (script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> => {
    calls++;
    if (mode === 'hang') return new Promise(() => {});
    if (mode === 'fail') return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    return new Promise((resolve) => clock.setTimer(() => resolve(replyTo(script, keys, args)), delayMs));
  };
  const adapter: RedisAdapter = { cluster, evalsha: answer, eval: answer };
  if (cluster) adapter.nodeOf = (slot) => (slot < 8192 ? 'A:1' : 'B:2');
  return { adapter, set: (m) => void (mode = m), calls: () => calls };
}

/** replyTo returns what the script would: 1 for refund and reset, all-admitted for consumeAll and batches, else an admitted decision. */
function replyTo(script: string, keys: readonly string[], args: readonly string[]): unknown {
  if (args[1] === 'refund' || args[1] === 'reset') return 1;
  if (script === BATCH_SCRIPT.sha1 || script === BATCH_SCRIPT.source) return '1,3,0,0,'.repeat(keys.length);
  const decisions = keys.flatMap(() => ['1', '3', '0', '0']);
  return script === CONSUME_ALL_SCRIPT.sha1 || script === CONSUME_ALL_SCRIPT.source ? ['1', ...decisions] : decisions;
}

/** recorder returns an observer that keeps every store event as [hook, event]. */
function recorder(): { observer: Observer; events: Array<[string, Record<string, unknown>]> } {
  const events: Array<[string, Record<string, unknown>]> = [];
  const keep =
    (hook: string) =>
    (event: object): void =>
      void events.push([hook, { ...event }]);
  return {
    observer: {
      storeCall: keep('storeCall'),
      storeError: keep('storeError'),
      circuit: keep('circuit'),
      fallback: keep('fallback'),
    },
    events,
  };
}

const policy = fixedWindow({ limit: 4, windowMs: 60_000 });

/** tick lets promise reactions and the batcher's setImmediate run. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function storeOf(
  adapter: RedisAdapter,
  clock: ManualClock,
  observer: Observer | undefined,
  more: { onError?: OnError; maxBatchSize?: number; timeoutMs?: number } = {},
): RedisStore {
  return new RedisStore({
    adapter,
    clock,
    timers: clock,
    failuresToOpen: 2,
    probeIntervalMs: 100,
    timeoutMs: 50,
    ...(observer === undefined ? {} : { observer }),
    ...more,
  });
}

describe("storeCall: one event per round trip, timed on the store's clock", () => {
  test('ten decisions of one tick are one batch call; one alone is its own call', async () => {
    const clock = new ManualClock(1000);
    const { adapter } = timedAdapter(clock, 7);
    const { observer, events } = recorder();
    const table = storeOf(adapter, clock, observer).bind(policy);
    const batch = Promise.all(Array.from({ length: 10 }, (_, i) => table.consume(`k${i}`, 1, Number.NaN)));
    await tick();
    clock.advance(7);
    await batch;
    const alone = table.peek('k0', 1, Number.NaN);
    await tick();
    clock.advance(3);
    await tick();
    clock.advance(4);
    await alone;
    assert.deepEqual(events, [
      ['storeCall', { store: 'redis', operation: 'batch', durationMs: 7, ok: true }],
      ['storeCall', { store: 'redis', operation: 'peek', durationMs: 7, ok: true }],
    ]);
  });

  test('a call cut off by the deadline is not ok and lasts timeoutMs; refund and consumeAll name themselves', async () => {
    const clock = new ManualClock();
    const { adapter, set } = timedAdapter(clock, 0);
    const { observer, events } = recorder();
    const store = storeOf(adapter, clock, observer, { maxBatchSize: 1, onError: 'fail-open' });
    const table = store.bind(policy);
    set('hang');
    const hung = table.consume('a', 1, Number.NaN);
    clock.advance(50);
    assert.equal((await hung).reason, 'fail-open');
    set('ok');
    const refunded = table.refund('a', 1, Number.NaN);
    const all = store.consumeAll([{ policy, key: 'a' }]);
    await tick();
    clock.advance(0);
    await Promise.all([refunded, all]);
    const calls = events.filter(([hook]) => hook === 'storeCall').map(([, e]) => [e.operation, e.durationMs, e.ok]);
    assert.deepEqual(calls, [
      ['consume', 50, false],
      ['refund', 0, true],
      ['consumeAll', 0, true],
    ]);
  });
});

describe('storeError, circuit and fallback', () => {
  test('errors name the policy applied; the circuit reports open, half-open, closed', async () => {
    const clock = new ManualClock();
    const { adapter, set } = timedAdapter(clock, 0);
    const { observer, events } = recorder();
    const table = storeOf(adapter, clock, observer, { maxBatchSize: 1, onError: 'fail-closed' }).bind(policy);
    set('fail');
    await table.consume('a', 1, Number.NaN);
    await table.consume('a', 1, Number.NaN); // opens the circuit
    await table.consume('a', 1, Number.NaN); // refused unsent: still an error the policy answered
    clock.advance(100);
    set('ok');
    const probe = table.consume('a', 1, Number.NaN);
    await tick();
    clock.advance(0);
    assert.equal((await probe).reason, 'ok');
    const seen = events
      .filter(([hook]) => hook !== 'storeCall')
      .map(([hook, e]) =>
        hook === 'circuit'
          ? `circuit ${String(e.state)} at ${String(e.atMs)}`
          : `${hook} ${String(e.policy)} at ${String(e.atMs)}`,
      );
    assert.deepEqual(seen, [
      'storeError fail-closed at 0',
      'circuit open at 0',
      'storeError fail-closed at 0',
      'storeError fail-closed at 0',
      'circuit half-open at 100',
      'circuit closed at 100',
    ]);
    const errors = events.filter(([hook]) => hook === 'storeError').map(([, e]) => e.error);
    assert.ok(
      errors.every(
        (e) =>
          e instanceof Error &&
          /STORE_ERROR|ECONNREFUSED|circuit is open/.test(`${(e as { code?: string }).code} ${(e as Error).message}`),
      ),
    );
  });

  test("on a cluster each node's circuit is reported with its node", async () => {
    const clock = new ManualClock();
    const { adapter, set } = timedAdapter(clock, 0, true);
    const { observer, events } = recorder();
    const table = storeOf(adapter, clock, observer, { maxBatchSize: 1, onError: 'fail-open' }).bind(policy);
    let keyOnA = '';
    for (let i = 0; keyOnA === ''; i++) if (hashSlotOf(table.entryOf(`u${i}`).redisKey) < 8192) keyOnA = `u${i}`;
    set('fail');
    for (let i = 0; i < 3; i++) await table.consume(keyOnA, 1, Number.NaN);
    assert.deepEqual(
      events.filter(([hook]) => hook === 'circuit').map(([, e]) => [e.node, e.state]),
      [['A:1', 'open']],
    );
    assert.deepEqual(
      events.filter(([hook]) => hook === 'storeError').map(([, e]) => e.policy),
      ['fail-open', 'fail-open', 'fail-open'],
    );
  });

  test('the local fallback reports when it takes over and when Redis decides again', async () => {
    const clock = new ManualClock();
    const { adapter, set } = timedAdapter(clock, 0);
    const { observer, events } = recorder();
    const table = storeOf(adapter, clock, observer, {
      maxBatchSize: 1,
      onError: { fallback: 'local', share: 0.5 },
    }).bind(policy);
    set('fail');
    await table.consume('a', 1, Number.NaN);
    await table.consume('a', 1, Number.NaN);
    set('ok');
    clock.advance(100);
    const back = table.consume('a', 1, Number.NaN);
    await tick();
    clock.advance(0);
    assert.equal((await back).reason, 'ok');
    const fallbacks = events.filter(([hook]) => hook === 'fallback').map(([, e]) => [e.active, e.atMs]);
    assert.deepEqual(fallbacks, [
      [true, 0],
      [false, 100],
    ]);
    assert.deepEqual(
      events.filter(([hook]) => hook === 'storeError').map(([, e]) => e.policy),
      ['fallback', 'fallback'],
    );
  });

  test('a throwing observer changes nothing; under throw the error is reported and still thrown', async () => {
    const clock = new ManualClock();
    const { adapter, set } = timedAdapter(clock, 0);
    const seen: string[] = [];
    const observer: Observer = {
      storeError: (e) => {
        seen.push(e.policy);
        throw new Error('observer bug');
      },
    };
    const table = storeOf(adapter, clock, observer, { maxBatchSize: 1, onError: 'throw' }).bind(policy);
    set('fail');
    await assert.rejects(table.consume('a', 1, Number.NaN), /ECONNREFUSED/);
    await assert.rejects(table.reset('a'), /ECONNREFUSED/);
    assert.deepEqual(seen, ['throw', 'throw']);
  });
});

describe('free when nothing listens', () => {
  test('without store hooks, no clock is read for events', async () => {
    // The adaptive timeout times every answer, so the runner reads the clock once per call and
    // call, listener or not: a listener reads nothing more (it is handed those reads).
    const reads = async (observer: Observer | undefined): Promise<number> => {
      const manual = new ManualClock();
      let count = 0;
      const counting: Clock = { now: () => (count++, manual.now()) };
      const { adapter } = timedAdapter(manual, 0);
      const table = new RedisStore({
        adapter,
        clock: counting,
        timers: manual,
        maxBatchSize: 1,
        overLimitCacheMaxKeys: 0,
        ...(observer === undefined ? {} : { observer }),
      }).bind(policy);
      for (let i = 0; i < 20; i++) {
        const d = table.consume(`k${i}`, 1, Number.NaN);
        await tick();
        manual.advance(0);
        await d;
      }
      return count;
    };
    const bare = await reads(undefined);
    assert.equal(await reads({ decision: () => {} }), bare, 'an observer without store hooks costs nothing');
    assert.ok(bare > 0, 'the counting clock does see the reads the timeout needs');
    assert.equal(await reads(recorder().observer), bare, 'a listener of store calls reads no clock of its own');
  });
});
