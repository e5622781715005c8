/**
 * ServiceGuard, the deadline and circuit of RemoteStore and RateLimitClient, stepped on a manual
 * clock: calls cut off (and aborted) at the timeout, the circuit opening after failures in a row
 * and cutting off the calls still in flight, refusing without sending, probing, and closing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FloodgateError, ManualClock } from 'floodgate';
import { ServiceGuard } from '../../src/ratelimit/client/service-guard.js';

/** A call that never answers on its own: it settles only when told, and records its abort. */
interface Hung {
  readonly send: (signal: AbortSignal) => Promise<string>;
  aborted: boolean;
  answer(value: string): void;
}

function hung(): Hung {
  let resolve: (value: string) => void = () => undefined;
  const h: Hung = {
    aborted: false,
    send: (signal) => {
      signal.addEventListener('abort', () => (h.aborted = true));
      return new Promise<string>((r) => (resolve = r));
    },
    answer: (value) => resolve(value),
  };
  return h;
}

/** settled returns how `promise` has settled by now (after pending microtasks), without waiting for anything else. */
async function settled<T>(promise: Promise<T>): Promise<{ value?: T; code?: string } | 'pending'> {
  const marker = Symbol('pending');
  const raced = await Promise.race([
    promise.then(
      (value) => ({ value }),
      (e: FloodgateError) => ({ code: e.code }),
    ),
    new Promise<typeof marker>((r) => setImmediate(() => r(marker))),
  ]);
  return raced === marker ? 'pending' : raced;
}

function guardOn(
  clock: ManualClock,
  options: { timeoutMs?: number; failuresToOpen?: number } = {},
): { guard: ServiceGuard; states: string[] } {
  const states: string[] = [];
  const guard = new ServiceGuard(
    { clock, timers: clock, probeIntervalMs: 250, ...options },
    { where: 'Test', service: 'http://127.0.0.1:1', changed: (s) => void states.push(s) },
  );
  return { guard, states };
}

describe('ServiceGuard', () => {
  it('cuts a call off at its deadline with STORE_TIMEOUT and aborts it; an answer in time passes', async () => {
    const clock = new ManualClock(0);
    const { guard } = guardOn(clock, { timeoutMs: 100 });
    const slow = hung();
    const cut = guard.run(slow.send);
    clock.advance(99);
    assert.equal(await settled(cut), 'pending');
    clock.advance(1);
    assert.deepEqual(await settled(cut), { code: 'STORE_TIMEOUT' });
    assert.equal(slow.aborted, true, 'the HTTP request or gRPC call is aborted');
    const quick = hung();
    const passed = guard.run(quick.send);
    quick.answer('yes');
    assert.deepEqual(await settled(passed), { value: 'yes' });
  });

  it('opens after failures in a row, cuts off the calls in flight at once, refuses without sending, probes after the interval and closes on an answer', async () => {
    const clock = new ManualClock(0);
    const { guard, states } = guardOn(clock, { timeoutMs: 100, failuresToOpen: 3 });
    const first = [hung(), hung(), hung()].map((h) => guard.run(h.send));
    clock.advance(50);
    const later = hung();
    const inFlight = guard.run(later.send);
    clock.advance(50);
    for (const p of first) assert.deepEqual(await settled(p), { code: 'STORE_TIMEOUT' });
    assert.equal(guard.state, 'open');
    assert.deepEqual(
      await settled(inFlight),
      { code: 'STORE_TIMEOUT' },
      'cut off when the circuit opened, 50 ms before its own deadline',
    );
    assert.equal(later.aborted, true);

    let sent = 0;
    const refused = guard.run(async () => String(++sent));
    assert.deepEqual(await settled(refused), { code: 'STORE_ERROR' }, 'settled without waiting on anything');
    assert.equal(sent, 0, 'nothing is sent while open');

    clock.advance(250);
    const probe = hung();
    const probing = guard.run(probe.send);
    assert.equal(guard.state, 'half-open');
    assert.deepEqual(await settled(guard.run(async () => 'other')), { code: 'STORE_ERROR' }, 'one probe at a time');
    probe.answer('back');
    assert.deepEqual(await settled(probing), { value: 'back' });
    assert.equal(guard.state, 'closed');
    assert.deepEqual(states, ['open', 'half-open', 'closed']);
  });

  it('an input error says the service is well: it never opens the circuit', async () => {
    const clock = new ManualClock(0);
    const { guard } = guardOn(clock, { failuresToOpen: 1 });
    const bad = guard.run(() => Promise.reject(new FloodgateError('INVALID_OPTION', 'bad descriptor', 'request')));
    assert.deepEqual(await settled(bad), { code: 'INVALID_OPTION' });
    assert.equal(guard.state, 'closed');
    const down = guard.run(() => Promise.reject(new FloodgateError('STORE_ERROR', 'connection refused')));
    assert.deepEqual(await settled(down), { code: 'STORE_ERROR' });
    assert.equal(guard.state, 'open');
  });

  it('adapts by default: the cap before any answer, then 3 × the recent p99 down to the 25 ms floor', async () => {
    const clock = new ManualClock(0);
    const { guard } = guardOn(clock);
    const first = guard.run(hung().send);
    clock.advance(249);
    assert.equal(await settled(first), 'pending', 'nothing is known before the first answer: the cap, 250 ms');
    clock.advance(1);
    assert.deepEqual(await settled(first), { code: 'STORE_TIMEOUT' });
    for (let i = 0; i < 20; i++) {
      const h = hung();
      const p = guard.run(h.send);
      clock.advance(2);
      h.answer('ok');
      await p;
    }
    const cut = guard.run(hung().send);
    clock.advance(24);
    assert.equal(await settled(cut), 'pending');
    clock.advance(1);
    assert.deepEqual(await settled(cut), { code: 'STORE_TIMEOUT' }, 'answers of 2 ms: 3 × 2 = 6 ms, held at the floor');
  });

  it('refuses bad options with INVALID_OPTION naming them', () => {
    const seams = { where: 'RemoteStore', service: 'http://127.0.0.1:1' };
    assert.throws(
      () => new ServiceGuard({ timeoutMs: 0 }, seams),
      (e: FloodgateError) => e.code === 'INVALID_OPTION' && e.option === 'RemoteStore.timeoutMs',
    );
    assert.throws(
      () => new ServiceGuard({ timeoutMs: { floorMs: 300, capMs: 100 } }, seams),
      (e: FloodgateError) => e.option === 'RemoteStore.timeoutMs.floorMs',
    );
    assert.throws(
      () => new ServiceGuard({ failuresToOpen: 0 }, seams),
      (e: FloodgateError) => e.option === 'RemoteStore.failuresToOpen',
    );
    assert.throws(
      () => new ServiceGuard({ probeIntervalMs: -1 }, seams),
      (e: FloodgateError) => e.option === 'RemoteStore.probeIntervalMs',
    );
  });
});
