import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import { ManualClock } from '../../src/core/clock.js';
import { FloodgateError } from '../../src/core/errors.js';
import type { Observer } from '../../src/core/events.js';
import { RedisStore, ioredisAdapter, type OnError } from '../../src/redis.js';
import { RedisSmoothLimiter } from '../../src/waiting/redis-smooth-limiter.js';
import { useRedis } from '../redis/setup.js';

// Redis faults under the fleet's smooth limiter, on a real redis-server hung with SIGSTOP. The
// store's deadline timer and the limiter's waits run on a ManualClock (test mode), so each
// deadline passes exactly when the test moves the clock. A call cut off at the store's deadline
// waits LATE_MS more for Redis's late answer; onError decides it only when none comes.

const redis = useRedis();
let names = 0;
const TIMEOUT_MS = 1000;
const LATE_MS = 300;

function setup(onError: OnError, observer?: Observer, lateAnswerMs = LATE_MS) {
  const clock = new ManualClock(1_000_000);
  const store = new RedisStore({
    ...(observer === undefined ? {} : { observer }),
    adapter: ioredisAdapter(redis().client),
    unsafeTestTime: true,
    clock,
    timers: clock,
    timeoutMs: TIMEOUT_MS,
    onError,
  });
  const limiter = RedisSmoothLimiter.bursty({
    store,
    name: `faults-${names++}`,
    permitsPerSecond: 10,
    maxBurstSeconds: 0,
    lateAnswerMs,
  });
  return { clock, limiter };
}

function code(error: unknown): string | undefined {
  return error instanceof FloodgateError ? error.code : undefined;
}

/** Hangs Redis while `during` runs, then resumes it and lets every late answer be handled. */
async function whileHung(during: () => Promise<void>): Promise<void> {
  redis().servers.signal(0, 'SIGSTOP');
  try {
    await during();
  } finally {
    redis().servers.signal(0, 'SIGCONT');
  }
  await redis().client.ping(); // answered after the scripts sent before it
  await nextMacrotask(); // their late answers handled, releases queued and sent
}

/**
 * Moves the clock past the store's deadline, then past the wait for a late answer, so onError
 * decides the calls sent (the cut-off is heard between the two).
 */
async function decided(clock: ManualClock): Promise<void> {
  clock.advance(TIMEOUT_MS);
  await nextMacrotask();
  clock.advance(LATE_MS);
}

/** Lets the calls of this turn of the event loop go out (they share one script). */
const sent = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RedisSmoothLimiter when Redis hangs', () => {
  test("'throw': the call rejects with STORE_TIMEOUT once no late answer came", async () => {
    const { clock, limiter } = setup('throw');
    await whileHung(async () => {
      let settled = false;
      const call = limiter.acquire().finally(() => (settled = true));
      await sent();
      clock.advance(TIMEOUT_MS);
      await nextMacrotask();
      assert.equal(settled, false, 'cut off at the store deadline, it waits for the late answer');
      clock.advance(LATE_MS);
      await assert.rejects(call, (e) => code(e) === 'STORE_TIMEOUT');
    });
  });

  test("lateAnswerMs 0: 'throw' rejects at the store's deadline", async () => {
    const { clock, limiter } = setup('throw', undefined, 0);
    await whileHung(async () => {
      const call = limiter.acquire();
      await sent();
      clock.advance(TIMEOUT_MS);
      await assert.rejects(call, (e) => code(e) === 'STORE_TIMEOUT');
    });
  });

  test("'fail-open': acquire goes at once and tryAcquire says yes", async () => {
    const { clock, limiter } = setup('fail-open');
    await whileHung(async () => {
      const calls = Promise.all([limiter.acquire(), limiter.tryAcquire()]);
      await sent();
      await decided(clock);
      assert.deepEqual(await calls, [0, true]);
    });
  });

  test('a late answer is honoured: the caller cut off at the deadline waits its turn on the schedule Redis kept', async () => {
    const { clock, limiter } = setup('fail-open');
    await limiter.reserve(50); // the next free moment is 5 s away
    let waited: number | undefined;
    await whileHung(async () => {
      void limiter.acquire().then((seconds) => (waited = seconds));
      await sent();
      clock.advance(TIMEOUT_MS);
    }); // Redis answers within lateAnswerMs: the reservation it made 5 s from the call
    await nextMacrotask();
    assert.equal(waited, undefined, 'not let go at once, as fail-open would have');
    // Its answer came at 1 s: the schedule is taken up to 5.1 s, and the caller sleeps 5 s from the answer.
    assert.equal(await limiter.reserve(), 5100 - TIMEOUT_MS, 'the late reservation was kept');
    clock.advance(5000 - 1);
    await nextMacrotask();
    assert.equal(waited, undefined, 'not before its turn');
    clock.advance(1);
    await nextMacrotask();
    assert.equal(waited, 5, 'it waited the 5 s Redis reserved for it');
  });

  test('a late answer to reserve and tryAcquire is honoured too, and a refusal stays a refusal', async () => {
    const { clock, limiter } = setup('fail-open');
    await limiter.reserve(50); // the next free moment is 5 s away
    await whileHung(async () => {
      const reserved = limiter.reserve();
      const tried = limiter.tryAcquire(1, 100); // 5 s is more than 100 ms: Redis refuses
      await sent();
      clock.advance(TIMEOUT_MS);
      await nextMacrotask();
      redis().servers.signal(0, 'SIGCONT');
      assert.equal(await reserved, 5000, 'the wait Redis reserved, from the call');
      assert.equal(await tried, false, 'fail-open would have said yes');
    });
  });

  test("'fail-closed': tryAcquire says no, acquire (which cannot say no) rejects", async () => {
    const { clock, limiter } = setup('fail-closed');
    await whileHung(async () => {
      const tried = limiter.tryAcquire(1, 500);
      const acquired = limiter.acquire();
      await sent();
      await decided(clock);
      assert.equal(await tried, false);
      await assert.rejects(acquired, (e) => code(e) === 'STORE_TIMEOUT');
    });
  });

  test('local fallback: this process paces itself at its share of the rate; the observer hears it', async () => {
    const events: string[] = [];
    const observer: Observer = {
      storeError: (e) => events.push(`storeError ${(e.error as FloodgateError).code} ${e.policy}`),
      fallback: (e) => events.push(`fallback ${e.active}`),
    };
    const { clock, limiter } = setup({ fallback: 'local', nodes: 2 }, observer);
    await whileHung(async () => {
      const first = limiter.acquire();
      const rest = Promise.all([limiter.acquire(), limiter.acquire()]);
      await sent();
      await decided(clock);
      assert.equal(await first, 0);
      clock.advance(400); // 5 per second here: the others wait 200 and 400 ms
      assert.deepEqual(await rest, [0.2, 0.4]);
    });
    await limiter.reserve(); // Redis decides again
    assert.deepEqual(events, [
      'storeError STORE_TIMEOUT fallback',
      'fallback true',
      'storeError STORE_TIMEOUT fallback',
      'storeError STORE_TIMEOUT fallback',
      'fallback false',
    ]);
  });

  test('maxWaitMs bounds the wait for a hung Redis too: WAIT_TIMEOUT before the store gives up', async () => {
    const { clock, limiter } = setup('fail-open');
    await whileHung(async () => {
      const call = limiter.acquire(1, { maxWaitMs: 50 });
      await sent();
      clock.advance(50);
      await assert.rejects(call, (e) => code(e) === 'WAIT_TIMEOUT');
      clock.advance(TIMEOUT_MS); // the script's own deadline, so nothing is left waiting
    });
  });

  test('a reservation Redis made after onError decided its call is released: the schedule is as if it never was', async () => {
    const { clock, limiter } = setup('fail-open');
    await limiter.reserve(50); // the next free moment is 5 s away
    await whileHung(async () => {
      const call = limiter.acquire();
      await sent();
      await decided(clock);
      assert.equal(await call, 0, 'decided by fail-open');
    });
    assert.equal(await limiter.reserve(), 5000 - TIMEOUT_MS - LATE_MS, 'the late reservation (at 5 s) was given back');
  });

  test('maxWaitMs ends a wait for a late answer too, and the reservation is released when it arrives', async () => {
    const { clock, limiter } = setup('fail-open');
    await limiter.reserve(50);
    await whileHung(async () => {
      const call = limiter.acquire(1, { maxWaitMs: TIMEOUT_MS + 100 });
      await sent();
      clock.advance(TIMEOUT_MS);
      await nextMacrotask();
      clock.advance(100);
      await assert.rejects(call, (e) => code(e) === 'WAIT_TIMEOUT');
    });
    assert.equal(await limiter.reserve(), 5000 - TIMEOUT_MS - 100, 'the late reservation was given back');
  });

  test('an abort while Redis hangs rejects at once, and the reservation is released when it arrives', async () => {
    const { clock, limiter } = setup('throw');
    await limiter.reserve(50);
    const controller = new AbortController();
    await whileHung(async () => {
      const call = limiter.acquire(1, { signal: controller.signal });
      await sent();
      clock.advance(10);
      controller.abort();
      await assert.rejects(call, (e) => code(e) === 'ABORTED');
    });
    assert.equal(await limiter.reserve(), 5000 - 10);
  });
});
