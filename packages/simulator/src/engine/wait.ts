import { FloodgateError, Limiter, ManualClock, type Algorithm } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { storeFor } from './refuse.js';

/** Codes of an `acquire` that gave up on a request: the request counts as refused. */
const REFUSALS = new Set(['WAIT_TIMEOUT', 'QUEUE_FULL', 'COST_EXCEEDS_LIMIT', 'INVALID_COST']);

/** Lets every promise reaction queued so far run (a macrotask turn drains the microtask queue). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * runWait returns, for each arrival, the time `Limiter.acquire` admitted it, or NaN when it gave
 * up (`maxWaitMs` passed or could not be met). Virtual time moves from one event to the next: an
 * arrival, or the next timer the limiter set on the manual clock; after each move the promises
 * settle before the clock moves again, so each admission is stamped with the time it happened.
 */
export async function runWait(algorithm: Algorithm, arrivals: Arrivals, maxWaitMs: number): Promise<Float64Array> {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy: algorithm, store: storeFor(arrivals), clock });
  const admittedAtMs = new Float64Array(arrivals.length).fill(NaN);
  let failure: unknown;
  const start = (i: number): void => {
    const options = { cost: arrivals.costs[i]!, maxWaitMs };
    limiter.acquire(arrivals.keys[arrivals.keyIds[i]!]!, options).then(
      () => {
        admittedAtMs[i] = clock.now();
      },
      (error: unknown) => {
        if (!(error instanceof FloodgateError && REFUSALS.has(error.code))) failure ??= error;
      },
    );
  };
  let i = 0;
  while (i < arrivals.length || clock.timerCount() > 0) {
    const nextArrivalMs = i < arrivals.length ? arrivals.atMs[i]! : Infinity;
    const nextTimerMs = clock.nextTimerAtMs() ?? Infinity;
    if (nextTimerMs < nextArrivalMs) {
      clock.set(nextTimerMs);
    } else {
      clock.set(nextArrivalMs);
      for (; i < arrivals.length && arrivals.atMs[i] === nextArrivalMs; i++) start(i);
    }
    await settle();
    if (failure !== undefined) throw failure;
  }
  return admittedAtMs;
}
