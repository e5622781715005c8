/** The simulator's Guava limiters: one smooth policy spec made into the library's limiter. */
import { SmoothRateLimiter } from 'floodgate';
import type { PolicySpec } from '../scenario.js';

/** SmoothSpec is a smooth policy of a scenario: Guava's bursty or warming-up limiter. */
export type SmoothSpec = Extract<PolicySpec, { type: 'smooth-bursty' | 'smooth-warming-up' }>;

/** createSmooth returns a limiter at `share` of the spec's rate whose clock reads `nowMicros`, so it starts there (a fresh limiter stores nothing). */
export function createSmooth(spec: SmoothSpec, share: number, nowMicros: number): SmoothRateLimiter {
  const clock = { now: () => nowMicros / 1000 };
  const rate = spec.permitsPerSecond * share;
  return spec.type === 'smooth-bursty'
    ? SmoothRateLimiter.bursty(rate, { maxBurstSeconds: spec.maxBurstSeconds, clock })
    : SmoothRateLimiter.warmingUp(rate, spec.warmupMs, { coldFactor: spec.coldFactor, clock });
}
