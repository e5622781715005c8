import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FloodgateError, ManualClock, Permit, Semaphore, type SemaphoreOptions } from '../../src/index.js';
import { flush, runAll, runUntil, track } from './support.js';
import { runs } from '../support/sweep.js';

function setup(options: Omit<SemaphoreOptions, 'clock'>) {
  const clock = new ManualClock(0);
  return { clock, semaphore: new Semaphore({ ...options, clock }) };
}

describe('Semaphore: concurrency limits', () => {
  test('permits are handed out until none is free, then first in, first out as they come back', async () => {
    const { clock, semaphore } = setup({ permits: 2 });
    const a = await semaphore.acquire();
    const b = await semaphore.acquire();
    const waiters = [0, 1, 2].map(() => track(clock, semaphore.acquire()));
    await flush();
    assert.deepEqual([semaphore.available, semaphore.held, semaphore.waiting], [0, 2, 3]);
    b.release();
    await flush();
    assert.deepEqual(
      waiters.map((w) => w.outcome.kind),
      ['admitted', 'pending', 'pending'],
    );
    a.release();
    waiters[0]!.value!.release();
    await flush();
    assert.deepEqual(
      waiters.map((w) => w.outcome.kind),
      ['admitted', 'admitted', 'admitted'],
    );
    assert.equal(semaphore.held, 2);
  });

  test('release is idempotent: a second release frees nothing', async () => {
    const { semaphore } = setup({ permits: 1 });
    const permit = await semaphore.acquire();
    permit.release();
    const next = await semaphore.acquire();
    permit.release(); // late, and twice: must not free the permit `next` holds
    assert.equal(semaphore.available, 0);
    assert.deepEqual([permit.state, next.state], ['released', 'held']);
  });

  test('using releases at the end of the block, also when it throws', async () => {
    const { semaphore } = setup({ permits: 1 });
    {
      using permit = await semaphore.acquire();
      assert.equal(permit.state, 'held');
      assert.equal(semaphore.available, 0);
    }
    assert.equal(semaphore.available, 1);
    await assert.rejects(async () => {
      using _permit = await semaphore.acquire();
      throw new Error('work failed');
    }, /work failed/);
    assert.equal(semaphore.available, 1);
    const permit = semaphore.tryAcquire()!;
    permit[Symbol.dispose]();
    assert.equal(permit.state, 'released');
  });

  test('maxWaitMs: the waiter fails at its deadline; 0 means now or fail', async () => {
    const { clock, semaphore } = setup({ permits: 1 });
    const held = await semaphore.acquire();
    const patient = track(clock, semaphore.acquire({ maxWaitMs: 500 }));
    const impatient = track(clock, semaphore.acquire({ maxWaitMs: 0 }));
    await flush();
    assert.deepEqual(impatient.outcome, { kind: 'failed', code: 'WAIT_TIMEOUT', atMs: 0 });
    await runUntil(clock, 499);
    assert.equal(patient.outcome.kind, 'pending');
    await runUntil(clock, 500);
    assert.deepEqual(patient.outcome, { kind: 'failed', code: 'WAIT_TIMEOUT', atMs: 500 });
    held.release();
    assert.equal(semaphore.available, 1, 'nobody took the permit the timed-out waiter would have had');
    assert.equal(clock.timerCount(), 0);
  });

  test('maxQueue: refused at once when the line is full', async () => {
    const { clock, semaphore } = setup({ permits: 1, maxQueue: 1 });
    await semaphore.acquire();
    const waiting = track(clock, semaphore.acquire());
    const refused = track(clock, semaphore.acquire());
    await flush();
    assert.deepEqual(
      [waiting.outcome.kind, refused.outcome],
      ['pending', { kind: 'failed', code: 'QUEUE_FULL', atMs: 0 }],
    );
  });

  test('an abort ends the wait with ABORTED (reason as cause) and the line moves on', async () => {
    const { clock, semaphore } = setup({ permits: 1 });
    const held = await semaphore.acquire();
    const controller = new AbortController();
    const leaving = track(clock, semaphore.acquire({ signal: controller.signal }));
    const next = track(clock, semaphore.acquire());
    const reason = new Error('request closed');
    controller.abort(reason);
    await flush();
    assert.equal((leaving.error as FloodgateError).code, 'ABORTED');
    assert.equal((leaving.error as FloodgateError).cause, reason);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    held.release();
    await flush();
    assert.equal(next.outcome.kind, 'admitted');
    await assert.rejects(semaphore.acquire({ signal: AbortSignal.abort() }), { code: 'ABORTED' });
  });

  test('tryAcquire never overtakes waiters', async () => {
    const { semaphore } = setup({ permits: 1 });
    const held = semaphore.tryAcquire()!;
    void semaphore.acquire();
    held.release(); // goes to the waiter
    assert.equal(semaphore.tryAcquire(), undefined);
  });

  test('lease: a permit whose holder vanished is reclaimed for a waiter; its late release frees nothing', async () => {
    const reclaimed: Permit[] = [];
    const { clock, semaphore } = setup({ permits: 1, leaseMs: 1000, onReclaim: (p) => reclaimed.push(p) });
    const lost = await semaphore.acquire(); // its holder never releases
    const waiter = track(clock, semaphore.acquire());
    await runUntil(clock, 999);
    assert.equal(waiter.outcome.kind, 'pending');
    await runUntil(clock, 1000);
    assert.deepEqual(waiter.outcome, { kind: 'admitted', atMs: 1000 });
    assert.deepEqual([lost.state, reclaimed], ['reclaimed', [lost]]);
    lost.release();
    assert.equal(semaphore.available, 0, "the late release does not free the new holder's permit");
    assert.equal(waiter.value!.expiresAtMs, 2000);
  });

  test('lease: with nobody waiting there is no timer; an expired permit is reclaimed when one is needed', async () => {
    const { clock, semaphore } = setup({ permits: 1, leaseMs: 100 });
    const lost = semaphore.tryAcquire()!;
    assert.equal(clock.timerCount(), 0);
    await runUntil(clock, 99);
    assert.equal(semaphore.tryAcquire(), undefined);
    await runUntil(clock, 100);
    const fresh = semaphore.tryAcquire();
    assert.ok(fresh instanceof Permit);
    assert.equal(lost.state, 'reclaimed');
  });

  test('lease: a clock set back neither shortens a new lease nor judges one on an earlier time', () => {
    const { clock, semaphore } = setup({ permits: 2, leaseMs: 1000 });
    clock.set(1000);
    const first = semaphore.tryAcquire()!;
    clock.set(0); // the wall clock steps back 1 s
    const second = semaphore.tryAcquire()!;
    // Granted at the latest time read (1000), not at 0: its lease ends after the first one's, in
    // grant order, and lasts its full length on the clock as it was.
    assert.deepEqual([second.grantedAtMs, second.expiresAtMs], [1000, 2000]);
    clock.set(1999);
    assert.equal(semaphore.tryAcquire(), undefined, 'no lease ended yet');
    clock.set(2000);
    assert.ok(semaphore.tryAcquire() instanceof Permit);
    assert.deepEqual([first.state, second.state], ['reclaimed', 'reclaimed']);
  });

  test('one timer at most, set only while someone waits', async () => {
    const { clock, semaphore } = setup({ permits: 1, leaseMs: 5000 });
    const held = await semaphore.acquire();
    for (let i = 0; i < 100; i++) void semaphore.acquire({ maxWaitMs: 1000 + i }).catch(() => {});
    assert.equal(clock.timerCount(), 1);
    await runAll(clock);
    assert.equal(semaphore.waiting, 0);
    assert.equal(clock.timerCount(), 0);
    held.release();
  });

  test('options are checked; acquire never throws', async () => {
    assert.throws(() => new Semaphore({ permits: 0 }), { option: 'Semaphore.permits' });
    assert.throws(() => new Semaphore({ permits: 1, leaseMs: 0 }), { option: 'Semaphore.leaseMs' });
    assert.throws(() => new Semaphore({ permits: 1, maxQueue: -1 }), { option: 'Semaphore.maxQueue' });
    assert.throws(() => new Semaphore({ permits: 1, onReclaim: 'log' as never }), { option: 'Semaphore.onReclaim' });
    await assert.rejects(new Semaphore({ permits: 1 }).acquire({ maxWaitMs: -5 }), { code: 'INVALID_OPTION' });
  });

  test('property: never more than `permits` held; grants in arrival order; releases may come in any order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(
          fc.oneof(fc.constant('acquire' as const), fc.constant('release' as const), fc.constant('abort' as const)),
          { maxLength: 60 },
        ),
        fc.infiniteStream(fc.nat()),
        async (permits, ops, picks) => {
          const { semaphore } = setup({ permits });
          const held: Permit[] = [];
          const granted: number[] = [];
          const controllers: AbortController[] = [];
          let arrivals = 0;
          const pick = picks[Symbol.iterator]();
          for (const op of ops) {
            if (op === 'acquire') {
              const index = arrivals++;
              const controller = new AbortController();
              controllers.push(controller);
              semaphore.acquire({ signal: controller.signal }).then(
                (p) => {
                  held.push(p);
                  granted.push(index);
                },
                () => {},
              );
            } else if (op === 'release' && held.length > 0) {
              held.splice(pick.next().value % held.length, 1)[0]!.release();
            } else if (op === 'abort' && controllers.length > 0) {
              controllers[pick.next().value % controllers.length]!.abort();
            }
            await flush();
            assert.ok(semaphore.held <= permits && held.length === semaphore.held);
            assert.equal(semaphore.held + semaphore.available, permits);
          }
          assert.deepEqual(
            granted,
            [...granted].sort((a, b) => a - b),
          );
        },
      ),
      { numRuns: runs(60) },
    );
  });
});
