import { FloodgateError, Limiter, ManualClock, MemoryStore, type Algorithm, type ConsumeOptions } from 'floodgate';
import type { Arrivals } from '../arrivals.js';

/** storeFor returns a memory store large enough to hold every key of `arrivals`. */
export function storeFor(arrivals: Arrivals): MemoryStore {
  return new MemoryStore({ maxKeys: Math.min(16_000_000, Math.max(1000, arrivals.keys.length)) });
}

/**
 * runRefuse returns, for each arrival, the time it was admitted (its arrival time) or NaN when
 * refused: every request goes through `Limiter.consumeSync` on a memory store, the manual clock
 * set to its arrival. A cost the policy can never admit is refused.
 */
export function runRefuse(algorithm: Algorithm, arrivals: Arrivals): Float64Array {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy: algorithm, store: storeFor(arrivals), clock });
  const { atMs, keyIds, costs, keys } = arrivals;
  const admittedAtMs = new Float64Array(arrivals.length);
  const options: ConsumeOptions = { cost: 1 };
  for (let i = 0; i < arrivals.length; i++) {
    const t = atMs[i]!;
    clock.set(t);
    options.cost = costs[i]!;
    admittedAtMs[i] = consumeOrRefuse(limiter, keys[keyIds[i]!]!, options) ? t : NaN;
  }
  return admittedAtMs;
}

/** consumeOrRefuse returns whether `limiter` admits the request; a cost it can never admit is a refusal. */
export function consumeOrRefuse(limiter: Limiter, key: string, options: ConsumeOptions): boolean {
  try {
    return limiter.consumeSync(key, options).allowed;
  } catch (error) {
    if (error instanceof FloodgateError && (error.code === 'COST_EXCEEDS_LIMIT' || error.code === 'INVALID_COST'))
      return false;
    throw error;
  }
}
