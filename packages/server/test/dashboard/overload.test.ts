import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker, ConcurrencyLimiter, ManualClock, type ConcurrencySnapshot } from 'floodgate';
import { OverloadBoard, type OverloadGuard, type ShedTotal } from '../../src/dashboard/overload.js';

const START_MS = Date.UTC(2026, 0, 2, 3, 4, 5, 250);

/** A guard whose limiter reports what the test sets. */
function fakeGuard(
  scope: string,
  now: Partial<ConcurrencySnapshot> = {},
): OverloadGuard & { set(s: Partial<ConcurrencySnapshot>): void } {
  let snapshot: ConcurrencySnapshot = { limit: 10, inFlight: 0, queued: 0, adaptive: undefined, ...now };
  return {
    scope,
    limiter: { snapshot: () => snapshot },
    breaker: undefined,
    set: (s) => (snapshot = { ...snapshot, ...s }),
  };
}

describe('OverloadBoard: the guards sampled once a second, bounded', () => {
  it('samples at each whole second of its clock from when it follows, and stops', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    const api = fakeGuard('route:api', { limit: 4, inFlight: 1 });
    board.follow({ guards: () => [api], shedTotals: () => [] });
    const steps: [advanceMs: number, inFlight: number][] = [
      [750, 2],
      [1_000, 3],
      [1_000, 4],
    ];
    for (const [advanceMs, inFlight] of steps) {
      api.set({ inFlight });
      clock.advance(advanceMs);
    }
    const view = board.view(clock.now());
    const samples = view.scopes[0]!.samples;
    assert.deepEqual(
      samples.map((s) => s.atMs - START_MS),
      [0, 750, 1_750, 2_750],
      'at follow, then on the whole seconds',
    );
    assert.deepEqual(
      samples.map((s) => s.inFlight),
      [1, 2, 3, 4],
    );
    assert.deepEqual(
      samples.map((s) => s.limit),
      [4, 4, 4, 4],
    );
    assert.equal(view.scopes[0]!.now?.inFlight, 4, 'the figures now are read at the view');
    board.stop();
    assert.equal(clock.timerCount(), 0);
    clock.advance(5_000);
    assert.equal(board.view(clock.now(), [api]).scopes[0]!.samples.length, 4, 'no sample after stop');
  });

  it('keeps `seconds` samples per scope whatever the time, and shows only those of the window', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock, seconds: 60 });
    const api = fakeGuard('route:api');
    board.follow({ guards: () => [api], shedTotals: () => [] });
    for (let i = 0; i < 500; i++) {
      api.set({ inFlight: i });
      clock.advance(1_000);
    }
    const samples = board.view(clock.now()).scopes[0]!.samples;
    assert.equal(samples.length, 60);
    assert.equal(samples.at(-1)!.inFlight, 499);
    assert.ok(
      samples.every((s, i) => i === 0 || s.atMs - samples[i - 1]!.atMs === 1_000),
      'one a second, oldest first',
    );
    board.stop();
    assert.equal(
      board.view(clock.now() + 30_000, [api]).scopes[0]!.samples.length,
      30,
      'a stopped board shows only what is still in the window',
    );
  });

  it('follows the guards in force: a scope a reload adds is sampled, one it removes is forgotten', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    const api = fakeGuard('route:api');
    const shared = fakeGuard('upstream:shared');
    let guards: OverloadGuard[] = [api, shared];
    board.follow({ guards: () => guards, shedTotals: () => [] });
    clock.advance(2_000);
    guards = [fakeGuard('route:api', { limit: 7 }), fakeGuard('route:new')];
    clock.advance(1_000);
    const view = board.view(clock.now());
    assert.deepEqual(
      view.scopes.map((s) => s.scope),
      ['route:api', 'route:new'],
    );
    assert.deepEqual(
      view.scopes[0]!.samples.map((s) => s.limit),
      [10, 10, 10, 7],
      'a kept scope keeps its series across the reload',
    );
    assert.equal(view.scopes[1]!.samples.length, 1);
    assert.equal(board.view(clock.now(), [shared]).scopes[0]!.samples.length, 0, 'the removed scope was forgotten');
  });

  it('counts the sheds since the previous sample, by reason, from cumulative totals (the first read is history)', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    const api = fakeGuard('route:api');
    let totals: ShedTotal[] = [{ scope: 'route:api', reason: 'limit', total: 50 }];
    board.follow({ guards: () => [api], shedTotals: () => totals });
    const steps: ShedTotal[][] = [
      [{ scope: 'route:api', reason: 'limit', total: 53 }],
      // Two tiers of one reason add up; a reason first seen now counts from 0.
      [
        { scope: 'route:api', reason: 'limit', total: 55 },
        { scope: 'route:api', reason: 'limit', total: 1 },
        { scope: 'route:api', reason: 'queue-full', total: 4 },
      ],
      [
        { scope: 'route:api', reason: 'limit', total: 56 },
        { scope: 'route:api', reason: 'queue-full', total: 4 },
        { scope: 'route:gone', reason: 'limit', total: 9 },
      ],
    ];
    for (const step of steps) {
      totals = step;
      clock.advance(1_000);
    }
    const scope = board.view(clock.now()).scopes[0]!;
    assert.deepEqual(
      scope.samples.map((s) => s.sheds),
      [{}, { limit: 3 }, { limit: 3, 'queue-full': 4 }, {}],
    );
    assert.deepEqual(scope.shedInWindow, { limit: 6, 'queue-full': 4 });
    assert.deepEqual(scope.shedPerSecond, { limit: 1.5, 'queue-full': 1 }, 'over the 4 samples there are');
  });

  it('waits for totals that come later, and samples once per read', async () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    let total = 0;
    board.follow({
      guards: () => [fakeGuard('route:api')],
      shedTotals: async () => [{ scope: 'route:api', reason: 'limit', total }],
    });
    await Promise.resolve();
    total = 5;
    clock.advance(1_000);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      board.view(clock.now()).scopes[0]!.samples.map((s) => s.sheds),
      [{}, { limit: 5 }],
    );
  });

  it('samples a second twice into one sample (latest figures, sheds added), and a clock gone back into the latest second', () => {
    const board = new OverloadBoard({ clock: new ManualClock(0) });
    const api = fakeGuard('route:api', { inFlight: 1 });
    const totals = (limit: number): ShedTotal[] => [{ scope: 'route:api', reason: 'limit', total: limit }];
    board.sample([api], totals(0), 10_100);
    board.sample([api], totals(2), 10_900);
    api.set({ inFlight: 2 });
    board.sample([api], totals(3), 10_950);
    board.sample([api], totals(4), 4_000);
    const samples = board.view(11_000, [api]).scopes[0]!.samples;
    assert.equal(samples.length, 1);
    assert.deepEqual(
      { atMs: samples[0]!.atMs, inFlight: samples[0]!.inFlight, sheds: samples[0]!.sheds },
      { atMs: 10_100, inFlight: 2, sheds: { limit: 4 } },
    );
  });

  it('keeps a sampler alive when its source throws: the second is missed, the next one is taken', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    let broken = false;
    const api = fakeGuard('route:api');
    board.follow({
      guards: () => (broken ? assert.fail('broken guards') : [api]),
      shedTotals: () => (broken ? assert.fail('broken totals') : []),
    });
    broken = true;
    assert.doesNotThrow(() => clock.advance(1_000));
    broken = false;
    clock.advance(1_000);
    assert.equal(board.view(clock.now()).scopes[0]!.samples.length, 2);
  });
});

describe('OverloadBoard: circuits', () => {
  it('records each change of state with the state it left, newest first, in a ring of 8, and shows the state and retry now', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    const breaker = new CircuitBreaker({
      trigger: { type: 'consecutiveFailures', count: 1 },
      minCalls: 1,
      openMs: 500,
      clock,
      name: 'route:pay',
      onStateChange: (e) => board.circuitTransition('route:pay', e.to, e.reason),
    });
    const guard: OverloadGuard = { scope: 'route:pay', limiter: undefined, breaker };
    board.follow({ guards: () => [guard], shedTotals: () => [] });
    breaker.tryAcquire()!.failed();
    clock.advance(200);
    let view = board.view(clock.now()).scopes[0]!;
    assert.deepEqual(
      { state: view.circuit!.state, retryInMs: view.circuit!.retryInMs },
      { state: 'open', retryInMs: 300 },
    );
    assert.equal(view.now, undefined, 'no limiter');
    clock.advance(300);
    breaker.tryAcquire()!.succeeded();
    view = board.view(clock.now()).scopes[0]!;
    assert.deepEqual(
      view.circuit!.transitions.map((t) => [t.atMs - START_MS, t.from, t.to, t.reason]),
      [
        [500, 'half-open', 'closed', 'probe-succeeded'],
        [500, 'open', 'half-open', 'probe-due'],
        [0, 'closed', 'open', 'consecutiveFailures'],
      ],
    );
    assert.equal(view.circuit!.state, 'closed');
    for (let i = 0; i < 10; i++) {
      breaker.tryAcquire()!.failed();
      clock.advance(500);
      breaker.tryAcquire()!.succeeded();
    }
    const transitions = board.view(clock.now()).scopes[0]!.circuit!.transitions;
    assert.equal(transitions.length, 8);
    assert.deepEqual(
      transitions.slice(0, 3).map((t) => t.to),
      ['closed', 'half-open', 'open'],
    );
    assert.ok(
      board.view(clock.now()).scopes[0]!.samples.some((s) => s.circuit === 'open'),
      'the samples carry the state',
    );
  });

  it('takes the state it left from its samples when a change comes without one (a reason not reported stays undefined)', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    let state = 'open';
    board.follow({
      guards: () => [{ scope: 'upstream:db', limiter: undefined, breaker: { state, retryInMs: () => 0 } }],
      shedTotals: () => [],
    });
    state = 'half-open';
    board.circuitTransition('upstream:db', 'half-open');
    assert.deepEqual(board.view(clock.now()).scopes[0]!.circuit!.transitions, [
      { atMs: START_MS, from: 'open', to: 'half-open', reason: undefined },
    ]);
  });

  it('forgets the circuit of a scope a reload removed', () => {
    const clock = new ManualClock(START_MS);
    const board = new OverloadBoard({ clock });
    const breaker = { state: 'closed', retryInMs: () => 0 };
    let guards: OverloadGuard[] = [{ scope: 'route:pay', limiter: undefined, breaker }];
    board.follow({ guards: () => guards, shedTotals: () => [] });
    board.circuitTransition('route:pay', 'open');
    guards = [];
    clock.advance(1_000);
    assert.deepEqual(
      board.view(clock.now(), [{ scope: 'route:pay', limiter: undefined, breaker }]).scopes[0]!.circuit!.transitions,
      [],
    );
  });
});

describe('OverloadBoard with a real limiter', () => {
  it('reads limit, in flight and queued from a ConcurrencyLimiter', () => {
    const clock = new ManualClock(START_MS);
    const limiter = new ConcurrencyLimiter({ limit: 2, maxQueue: 4, clock });
    const board = new OverloadBoard({ clock });
    limiter.tryAcquire();
    limiter.tryAcquire();
    void limiter.acquire();
    board.follow({ guards: () => [{ scope: 'route:api', limiter, breaker: undefined }], shedTotals: () => [] });
    const s = board.view(clock.now()).scopes[0]!.samples.at(-1)!;
    assert.deepEqual([s.limit, s.inFlight, s.queued, s.baselineRttMs], [2, 2, 1, undefined]);
    board.stop();
  });
});
