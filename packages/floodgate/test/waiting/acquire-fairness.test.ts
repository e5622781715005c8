import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Limiter,
  ManualClock,
  MemoryStore,
  decide,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type Store,
} from '../../src/index.js';
import { eventsOf, referenceOutcomes, type WaiterSpec } from './reference-queue.js';
/*
 * Each scenario runs against Limiter.acquire and against a plain model (reference-queue.ts) that
 * plans the whole line again at every event from the admissions alone; every outcome and its
 * time must match. Then the admissions, replayed through the pure policy, must all be allowed,
 * and must leave the store exactly where the store is: a caller that left cost nothing.
 *
 * A note on reservations: a booking's wait is rounded up to whole ms, and the bucket keeps
 * filling during that last fraction of a ms. A reservation counts that fill; consuming at the due
 * time would cap it at capacity when the cost is within (rate x 1 ms) of the capacity. Costs
 * here stay clear of that edge, where the two differ by less than one ms of refill.
 */

import { asyncStore, runAll, runUntil, seeded, track, type Outcome, type Tracked } from './support.js';

interface Shape {
  readonly waiters: number;
  /** Whether costs vary (they are all 1 otherwise): 1 to 3, and 0.5 unless whole costs are asked for. */
  readonly mixedCosts: boolean;
  readonly wholeCosts?: boolean;
  /** Whether some callers carry a finite maxWaitMs. */
  readonly deadlines: boolean;
}

/** scenario makes `shape.waiters` callers arriving 0 to 40 ms apart; about a third abort while waiting. */
function scenario(seed: number, shape: Shape): WaiterSpec[] {
  const random = seeded(seed);
  const waiters: WaiterSpec[] = [];
  let arrivalMs = 0;
  for (let i = 0; i < shape.waiters; i++) {
    arrivalMs += Math.floor(random() * 41);
    const costs = shape.wholeCosts === true ? [1, 1, 2, 3] : [0.5, 1, 1, 2, 3];
    const cost = shape.mixedCosts ? costs[Math.floor(random() * costs.length)]! : 1;
    const maxWaitMs = shape.deadlines && random() < 0.3 ? Math.floor(random() * 3000) : Infinity;
    const cancelAtMs = random() < 0.35 ? arrivalMs + Math.floor(random() * 4000) : Infinity;
    waiters.push({ arrivalMs, cost, maxWaitMs, cancelAtMs });
  }
  return waiters;
}

interface Run {
  readonly outcomes: Outcome[];
  /** Waiter indices in the order their admissions resolved. */
  readonly admittedOrder: number[];
  readonly limiter: Limiter;
  readonly clock: ManualClock;
  readonly peakTimers: number;
}

/** play runs the scenario against `Limiter.acquire` on one key, applying events in the model's order. */
async function play(policy: Algorithm, store: Store, waiters: readonly WaiterSpec[]): Promise<Run> {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy, store, clock });
  const controllers = waiters.map(() => new AbortController());
  const tracked: Tracked<void>[] = [];
  const admittedOrder: number[] = [];
  let peakTimers = 0;
  for (const event of eventsOf(waiters)) {
    await runUntil(clock, event.atMs);
    if (event.kind === 'cancel') {
      controllers[event.index]!.abort();
      continue;
    }
    const { cost, maxWaitMs } = waiters[event.index]!;
    const promise = limiter.acquire('key', { cost, maxWaitMs, signal: controllers[event.index]!.signal });
    promise.then(
      () => admittedOrder.push(event.index),
      () => {},
    );
    tracked[event.index] = track(clock, promise);
    peakTimers = Math.max(peakTimers, clock.timerCount());
  }
  await runAll(clock);
  return { outcomes: tracked.map((t) => t.outcome), admittedOrder, limiter, clock, peakTimers };
}

/** The state the policy reaches from the admissions alone, read at `nowMs` as a decision for a cost of 1. */
function chargedByAdmissions(
  policy: Algorithm,
  waiters: readonly WaiterSpec[],
  outcomes: readonly Outcome[],
  nowMs: number,
) {
  let state: Float64Array | undefined;
  const admitted = outcomes
    .map((outcome, index) => ({ outcome, index }))
    .filter((e): e is { outcome: { kind: 'admitted'; atMs: number }; index: number } => e.outcome.kind === 'admitted');
  for (const { outcome, index } of admitted) {
    const step = decide(policy, state, outcome.atMs, waiters[index]!.cost);
    assert.ok(step.decision.allowed, `waiter ${index} admitted at ${outcome.atMs} exceeds the policy`);
    state = step.state;
  }
  return decide(policy, state, nowMs, 0).decision;
}

async function checkScenario(policy: Algorithm, store: Store, waiters: readonly WaiterSpec[]): Promise<Run> {
  const run = await play(policy, store, waiters);
  assert.deepEqual(run.outcomes, referenceOutcomes(policy, waiters));
  const sorted = [...run.admittedOrder].sort((a, b) => a - b);
  assert.deepEqual(run.admittedOrder, sorted, 'admitted first in, first out');
  const nowMs = run.clock.now();
  const expected = chargedByAdmissions(policy, waiters, run.outcomes, nowMs);
  assert.deepEqual(
    await run.limiter.peek('key', { cost: 0 }),
    expected,
    'the store holds exactly what the admissions cost',
  );
  assert.equal(run.clock.timerCount(), 0, 'no timer left once nobody waits');
  // One timer for the key's line; an asynchronous store adds one for the deadline of its pending calls.
  const mostTimers = run.limiter.table.synchronous ? 1 : 2;
  assert.ok(run.peakTimers <= mostTimers, `${mostTimers} timers at most, saw ${run.peakTimers}`);
  return run;
}

const booking: readonly [string, () => Algorithm][] = [
  ['token bucket', () => tokenBucket({ capacity: 5, refillPerSecond: 40 })],
  ['GCRA', () => gcra({ rate: 40, periodMs: 1000, maxBurst: 4 })],
  // Costs stay below capacity: see the note on reservations at the top of the file.
  ['leaky bucket', () => leakyBucket({ capacity: 4, leakPerSecond: 30 })],
];
const retrying: readonly [string, () => Algorithm][] = [
  ['fixed window', () => fixedWindow({ limit: 5, windowMs: 200 })],
  ['sliding window log', () => slidingWindowLog({ limit: 5, windowMs: 200 })],
];

describe('acquire: 1,000 waiters with random cancellations', () => {
  for (const [name, make] of booking) {
    test(`${name}: unit costs; FIFO, exact admissions, aborts never charged`, async () => {
      const run = await checkScenario(
        make(),
        new MemoryStore(),
        scenario(1, { waiters: 1000, mixedCosts: false, deadlines: true }),
      );
      const counts = countKinds(run.outcomes);
      assert.ok(counts.admitted! > 300 && counts.ABORTED! > 30 && counts.WAIT_TIMEOUT! > 20, JSON.stringify(counts));
    });

    test(`${name}: mixed costs; later bookings are booked again after a cancellation`, async () => {
      await checkScenario(make(), new MemoryStore(), scenario(2, { waiters: 1000, mixedCosts: true, deadlines: true }));
    });
  }

  for (const [name, make] of retrying) {
    test(`${name}: the head retries alone; FIFO, exact admissions, aborts never charged`, async () => {
      const run = await checkScenario(
        make(),
        new MemoryStore(),
        scenario(3, { waiters: 1000, mixedCosts: true, wholeCosts: true, deadlines: false }),
      );
      assert.ok(countKinds(run.outcomes).ABORTED! > 30);
    });
  }
});

describe('acquire on an asynchronous store: the same answers', () => {
  for (const [name, make] of [...booking, ...retrying]) {
    test(`${name}: 300 waiters, mixed costs, cancellations`, async () => {
      const books = booking.some(([n]) => n === name);
      await checkScenario(
        make(),
        asyncStore(),
        scenario(4, { waiters: 300, mixedCosts: true, wholeCosts: !books, deadlines: books }),
      );
    });
  }

  test('token bucket, unit costs: a cancellation hands slots over with one refund', async () => {
    const store = asyncStore();
    await checkScenario(
      tokenBucket({ capacity: 2, refillPerSecond: 20 }),
      store,
      scenario(5, { waiters: 300, mixedCosts: false, deadlines: false }),
    );
  });
});

describe('acquire: many seeds, small scenarios', () => {
  test('token bucket and fixed window, 40 seeds of 60 waiters', async () => {
    for (let seed = 100; seed < 140; seed++) {
      for (const make of [booking[0]![1], retrying[0]![1]]) {
        const books = make === booking[0]![1];
        await checkScenario(
          make(),
          new MemoryStore(),
          scenario(seed, {
            waiters: 60,
            mixedCosts: seed % 2 === 0,
            wholeCosts: !books,
            deadlines: seed % 3 !== 0 && books,
          }),
        );
      }
    }
  });
});

function countKinds(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = { admitted: 0, ABORTED: 0, WAIT_TIMEOUT: 0 };
  for (const outcome of outcomes) {
    const kind = outcome.kind === 'failed' ? outcome.code : outcome.kind;
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}
