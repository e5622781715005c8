import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  type Algorithm,
  type ConsumeOptions,
  type Decision,
} from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { ZERO, type LaneRun, type Watch } from './lane-run.js';

/** storeFor returns a memory store large enough to hold every key of `arrivals`. */
export function storeFor(arrivals: Arrivals): MemoryStore {
  return new MemoryStore({ maxKeys: Math.min(16_000_000, Math.max(1000, arrivals.keys.length)) });
}

/**
 * runRefuse returns, for each arrival, the time it was admitted (its arrival time) or NaN when
 * refused, with the key's state after each decision: every request goes through
 * `Limiter.consumeSync` on a memory store, the manual clock set to its arrival. A cost the
 * policy can never admit is refused. Before time passes a step end, the watched key is peeked.
 */
export function runRefuse(algorithm: Algorithm, arrivals: Arrivals, watch: Watch): LaneRun {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy: algorithm, store: storeFor(arrivals), clock });
  const { atMs, keyIds, costs, keys } = arrivals;
  const admittedAtMs = new Float64Array(arrivals.length);
  const read = watch.reading.of!;
  const peek = (at: number): number => {
    clock.set(at);
    return read(limiter.peekSync(watch.key, ZERO));
  };
  const options: ConsumeOptions = { cost: 1 };
  const { probe, recorder } = watch;
  for (let i = 0; i < arrivals.length; i++) {
    const t = atMs[i]!;
    if (t >= probe.nextMs) probe.until(t, peek);
    clock.set(t);
    options.cost = costs[i]!;
    const key = keys[keyIds[i]!]!;
    const decision = decideOrRefuse(limiter, key, options);
    admittedAtMs[i] = decision?.allowed === true ? t : NaN;
    recorder.note(i, t, read(decision ?? limiter.peekSync(key, ZERO)));
  }
  watch.probe.until(Infinity, peek);
  return laneRun(admittedAtMs, 1, watch);
}

/** laneRun returns what an engine recorded in `admittedAtMs` and `watch`, for `nodes` nodes. */
export function laneRun(admittedAtMs: Float64Array, nodes: number, watch: Watch): LaneRun {
  return {
    admittedAtMs,
    stateAfter: watch.recorder.all,
    stateFullest: watch.recorder.fullest,
    nodes,
    stateAtStepEnd: watch.probe.values,
  };
}

/** decideOrRefuse returns `limiter`'s decision on the request, or undefined for a cost it can never admit (a refusal). */
export function decideOrRefuse(limiter: Limiter, key: string, options: ConsumeOptions): Decision | undefined {
  try {
    return limiter.consumeSync(key, options);
  } catch (error) {
    if (isCostRefusal(error)) return undefined;
    throw error;
  }
}

/** isCostRefusal returns whether `error` is the library's refusal of a cost the policy can never admit (the simulator counts it as refused). */
export function isCostRefusal(error: unknown): boolean {
  return error instanceof FloodgateError && (error.code === 'COST_EXCEEDS_LIMIT' || error.code === 'INVALID_COST');
}
