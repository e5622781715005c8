import { LeakyGate, SmoothRateLimiter } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import type { PolicySpec } from '../scenario.js';

/**
 * runShape returns, for each arrival, the time its turn came in a `LeakyGate` (the leaky bucket
 * as a queue: one turn every `intervalMs` per key, at most `capacity` waiting), or NaN when the
 * gate refused it because the queue was full. Each request takes one turn, whatever its cost.
 */
export function runShape(spec: Extract<PolicySpec, { type: 'shaping-queue' }>, arrivals: Arrivals): Float64Array {
  const gates = new Array<LeakyGate | undefined>(arrivals.keys.length);
  const admittedAtMs = new Float64Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++) {
    const k = arrivals.keyIds[i]!;
    const gate = (gates[k] ??= new LeakyGate({ intervalMs: spec.intervalMs, capacity: spec.capacity }));
    const t = arrivals.atMs[i]!;
    const ticket = gate.admit(t);
    admittedAtMs[i] = ticket.rejected ? NaN : t + ticket.waitMs;
  }
  return admittedAtMs;
}

/**
 * runSmooth returns, for each arrival, the time a `SmoothRateLimiter` (Guava's, one per key) lets
 * it start, or NaN when that wait would exceed `maxWaitMs` (Infinity: it always waits). Costs are
 * taken as whole permits, rounded up (a cost of 0 passes at once without reserving).
 */
export function runSmooth(
  spec: Extract<PolicySpec, { type: 'smooth-bursty' | 'smooth-warming-up' }>,
  arrivals: Arrivals,
  maxWaitMs: number,
): Float64Array {
  const limiters = new Array<SmoothRateLimiter | undefined>(arrivals.keys.length);
  const admittedAtMs = new Float64Array(arrivals.length);
  const timeoutMicros = maxWaitMs * 1000;
  for (let i = 0; i < arrivals.length; i++) {
    const t = arrivals.atMs[i]!;
    const permits = Math.ceil(arrivals.costs[i]!);
    if (permits === 0) {
      admittedAtMs[i] = t;
      continue;
    }
    const k = arrivals.keyIds[i]!;
    const nowMicros = Math.round(t * 1000);
    const limiter = (limiters[k] ??= createSmooth(spec, nowMicros));
    const waitMicros = Number.isFinite(timeoutMicros)
      ? limiter.tryReserveAt(permits, timeoutMicros, nowMicros)
      : limiter.reserveAt(permits, nowMicros);
    admittedAtMs[i] = waitMicros === false ? NaN : t + waitMicros / 1000;
  }
  return admittedAtMs;
}

/** A limiter whose clock reads the first arrival's time, so it starts there (a fresh limiter stores nothing). */
function createSmooth(
  spec: Extract<PolicySpec, { type: 'smooth-bursty' | 'smooth-warming-up' }>,
  nowMicros: number,
): SmoothRateLimiter {
  const clock = { now: () => nowMicros / 1000 };
  return spec.type === 'smooth-bursty'
    ? SmoothRateLimiter.bursty(spec.permitsPerSecond, { maxBurstSeconds: spec.maxBurstSeconds, clock })
    : SmoothRateLimiter.warmingUp(spec.permitsPerSecond, spec.warmupMs, { coldFactor: spec.coldFactor, clock });
}
