import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { FloodgateError } from '../../src/core/errors.js';
import type { Observer } from '../../src/core/events.js';
import { createClient } from 'redis';
import { RedisStore, SMOOTH_SCRIPT, ioredisAdapter, nodeRedisAdapter } from '../../src/redis.js';
import { RedisSmoothLimiter } from '../../src/waiting/redis-smooth-limiter.js';
import { useRedis } from '../redis/setup.js';

// The fleet's smooth limiter in one process, on a real Redis in test mode: the script takes the
// ManualClock's time, and every wait happens on that clock's timers, so nothing here sleeps.

const redis = useRedis();
let names = 0;

function setup(options: { rate?: number; maxBurstSeconds?: number; observer?: Observer } = {}) {
  const clock = new ManualClock(1_000_000);
  const store = new RedisStore({
    ...(options.observer === undefined ? {} : { observer: options.observer }),
    adapter: ioredisAdapter(redis().client),
    unsafeTestTime: true,
    clock,
    timers: clock,
    timeoutMs: 5000,
    onError: 'throw',
  });
  const name = `smooth-${names++}`;
  const limiter = RedisSmoothLimiter.bursty({
    store,
    name,
    permitsPerSecond: options.rate ?? 10,
    maxBurstSeconds: options.maxBurstSeconds ?? 0,
  });
  return { clock, store, name, limiter };
}

/** Tracks a promise's outcome without awaiting it. */
function track<T>(promise: Promise<T>): { value?: T; error?: unknown; done: boolean } {
  const out: { value?: T; error?: unknown; done: boolean } = { done: false };
  promise.then(
    (value) => Object.assign(out, { value, done: true }),
    (error: unknown) => Object.assign(out, { error, done: true }),
  );
  return out;
}

function code(error: unknown): string | undefined {
  return error instanceof FloodgateError ? error.code : undefined;
}

describe('RedisSmoothLimiter in one process', () => {
  test('the script has its pinned SHA1 (changed on purpose, never by accident), and Redis computes the same', async () => {
    assert.equal(SMOOTH_SCRIPT.sha1, 'e8ee5aa1dc34837b49ed5ebd570c27b5b5a138d0');
    assert.equal(await redis().client.script('LOAD', SMOOTH_SCRIPT.source), SMOOTH_SCRIPT.sha1);
  });

  test('a Redis that lost its scripts (SCRIPT FLUSH, a restart) gets the script again, and the state is kept', async () => {
    const { limiter } = setup();
    assert.equal(await limiter.reserve(), 0);
    await redis().client.script('FLUSH');
    assert.equal(await limiter.reserve(), 100);
  });

  test('through node-redis too: the same waits', async () => {
    const client = await createClient({ socket: { host: '127.0.0.1', port: redis().servers.ports[0]! } }).connect();
    try {
      const clock = new ManualClock(0);
      const store = new RedisStore({
        adapter: nodeRedisAdapter(client),
        unsafeTestTime: true,
        clock,
        timers: clock,
        timeoutMs: 5000,
        onError: 'throw',
      });
      const limiter = RedisSmoothLimiter.warmingUp({
        store,
        name: `node-redis-${names++}`,
        permitsPerSecond: 2,
        warmupMs: 4000,
      });
      const waits = [];
      for (let i = 0; i < 4; i++) waits.push(await limiter.reserve());
      // Guava's testWarmUp: a cold limiter at 2/s after a 4 s warm-up charges 1.375 s, 1.125 s, 0.875 s, ...
      assert.deepEqual(waits, [0, 1375, 2500, 3375]);
      assert.equal(await limiter.getRate(), 2);
    } finally {
      await client.close();
    }
  });

  test('callers of one process go first in, first out, each when its reservation is due', async () => {
    const depths: number[] = [];
    const { clock, limiter } = setup({ observer: { queue: (e) => depths.push(e.depth) } });
    const order: string[] = [];
    const calls = ['a', 'b', 'c'].map((id) => limiter.acquire().then((s) => (order.push(id), s)));
    await limiter.getRate(); // answered with the three acquires
    assert.deepEqual(order, ['a']);
    assert.equal(limiter.waiting, 2);
    clock.advance(99);
    await Promise.resolve();
    assert.deepEqual(order, ['a'], 'not before its reservation is due');
    clock.advance(1);
    await calls[1];
    clock.advance(100);
    assert.deepEqual(await Promise.all(calls), [0, 0.1, 0.2]);
    assert.deepEqual(order, ['a', 'b', 'c']);
    assert.deepEqual(depths, [1, 2, 1, 0], 'the observer hears the line grow and shrink');
  });

  test('a big request is granted at once and pays later: the next caller waits for it', async () => {
    const { limiter } = setup();
    assert.equal(await limiter.reserve(10), 0);
    assert.equal(await limiter.reserve(1), 1000);
  });

  test('tryAcquire reserves only when the wait fits, and a refusal reserves nothing', async () => {
    const { clock, limiter } = setup();
    assert.equal(await limiter.tryAcquire(), true);
    assert.equal(await limiter.tryAcquire(1, 99), false);
    assert.equal(await limiter.tryReserve(1, 50), false);
    const granted = limiter.tryAcquire(1, 100);
    await limiter.getRate();
    clock.advance(100);
    assert.equal(await granted, true);
    assert.equal(await limiter.reserve(), 100, 'the refusals took nothing');
  });

  test('abort releases the latest reservation not yet due; one with callers after it is kept', async () => {
    const { clock, limiter } = setup();
    const controller = [new AbortController(), new AbortController(), new AbortController()];
    const calls = controller.map((c) => track(limiter.acquire(1, { signal: c.signal })));
    await limiter.getRate();
    controller[1]!.abort(); // b: c reserved after it, so its place stays taken
    await Promise.resolve();
    assert.equal(code(calls[1]!.error), 'ABORTED');
    assert.equal(await limiter.reserve(), 300, 'b was not released: c counts on its place');
    const last = new AbortController();
    const d = track(limiter.acquire(1, { signal: last.signal }));
    await limiter.getRate();
    last.abort(); // d (at 400, after the reserve at 300): the latest and not yet due
    assert.equal(await limiter.reserve(), 400, "d's place was given back");
    assert.equal(code(d.error), 'ABORTED');
    clock.advance(200);
    await Promise.resolve();
    assert.ok(calls[2]!.done && calls[2]!.value === 0.2, 'c still goes at its time');
  });

  test('maxWaitMs: a wait that does not fit is refused with WAIT_TIMEOUT and reserves nothing', async () => {
    const { limiter } = setup();
    await limiter.reserve(2);
    await assert.rejects(limiter.acquire(1, { maxWaitMs: 150 }), (e) => code(e) === 'WAIT_TIMEOUT');
    assert.equal(await limiter.reserve(), 200);
  });

  test('maxWaitMs: an answer that comes too late to keep the deadline rejects, and its reservation (not yet due) is released', async () => {
    const { clock, limiter } = setup();
    await limiter.reserve(); // the next free moment is 100 ms away
    const call = limiter.acquire(1, { maxWaitMs: 150 });
    await new Promise((resolve) => setImmediate(resolve)); // sent: Redis reserves it at 100 ms, within 150
    clock.advance(60); // the answer is handled 60 ms later: the caller would go at 160, past its deadline
    await assert.rejects(call, (e) => code(e) === 'WAIT_TIMEOUT');
    assert.equal(await limiter.reserve(), 40, 'the late one was released: this one takes its place, 40 ms from now');
  });

  test('a signal already aborted rejects at once; bad arguments reject with INVALID_OPTION', async () => {
    const { limiter } = setup();
    await assert.rejects(limiter.acquire(1, { signal: AbortSignal.abort() }), (e) => code(e) === 'ABORTED');
    for (const permits of [0, 1.5, NaN]) {
      await assert.rejects(limiter.acquire(permits), (e) => code(e) === 'INVALID_OPTION');
      await assert.rejects(limiter.reserve(permits), (e) => code(e) === 'INVALID_OPTION');
    }
    await assert.rejects(limiter.setRate(Infinity), (e) => code(e) === 'INVALID_OPTION');
    await assert.rejects(limiter.acquire(1, { maxWaitMs: -1 }), (e) => code(e) === 'INVALID_OPTION');
    await assert.rejects(limiter.tryAcquire(1, NaN), (e) => code(e) === 'INVALID_OPTION');
  });

  test('options are checked, each error naming its option', () => {
    const { store } = setup();
    const cases: Array<[string, () => unknown]> = [
      ['store', () => RedisSmoothLimiter.bursty({ store: {} as RedisStore, name: 'x', permitsPerSecond: 1 })],
      ['name', () => RedisSmoothLimiter.bursty({ store, name: '', permitsPerSecond: 1 })],
      ['permitsPerSecond', () => RedisSmoothLimiter.bursty({ store, name: 'x', permitsPerSecond: 0 })],
      ['permitsPerSecond', () => RedisSmoothLimiter.bursty({ store, name: 'x', permitsPerSecond: Infinity })],
      [
        'maxBurstSeconds',
        () => RedisSmoothLimiter.bursty({ store, name: 'x', permitsPerSecond: 1, maxBurstSeconds: -1 }),
      ],
      ['idleTtlMs', () => RedisSmoothLimiter.bursty({ store, name: 'x', permitsPerSecond: 1, idleTtlMs: 0.5 })],
      ['warmupMs', () => RedisSmoothLimiter.warmingUp({ store, name: 'x', permitsPerSecond: 1, warmupMs: 0 })],
      [
        'coldFactor',
        () => RedisSmoothLimiter.warmingUp({ store, name: 'x', permitsPerSecond: 1, warmupMs: 1, coldFactor: 0.5 }),
      ],
      ['onError', () => RedisSmoothLimiter.bursty({ store, name: 'x', permitsPerSecond: 1, onError: 'open' as never })],
    ];
    for (const [option, make] of cases) {
      assert.throws(
        make,
        (e: unknown) => code(e) === 'INVALID_OPTION' && (e as FloodgateError).message.includes(option),
        option,
      );
    }
  });

  test('processes that disagree on the model get an error naming both, whatever onError says', async () => {
    const { store, name, limiter } = setup();
    await limiter.reserve();
    const other = RedisSmoothLimiter.warmingUp({
      store,
      name,
      permitsPerSecond: 10,
      warmupMs: 1000,
      onError: 'fail-open',
    });
    await assert.rejects(other.acquire(), (e) => {
      assert.equal(code(e), 'STORE_ERROR');
      assert.match((e as Error).message, /smooth-model .* created as bursty .* asked for as warmingUp/);
      return true;
    });
  });

  test('the key lives for ever by default, and idleTtlMs past its next-free moment when given', async () => {
    const { store, name, limiter } = setup();
    await limiter.reserve(3);
    assert.equal(await redis().client.pttl(`floodgate:smooth:{${name}}`), -1);
    const expiring = RedisSmoothLimiter.bursty({ store, name: `${name}-ttl`, permitsPerSecond: 10, idleTtlMs: 60_000 });
    await expiring.reserve(3);
    const ttl = await redis().client.pttl(`floodgate:smooth:{${name}-ttl}`);
    assert.ok(ttl > 60_000 && ttl <= 60_300, `ttl ${ttl}`);
  });

  test('setRate and getRate go through Redis: another process sees the new rate', async () => {
    const { store, name, limiter } = setup({ rate: 2 });
    const other = RedisSmoothLimiter.bursty({ store, name, permitsPerSecond: 2, maxBurstSeconds: 0 });
    assert.equal(await other.getRate(), 2);
    await limiter.setRate(4);
    assert.equal(await other.getRate(), 4);
    assert.equal(await other.reserve(), 0);
    assert.equal(await limiter.reserve(), 250);
  });
});
