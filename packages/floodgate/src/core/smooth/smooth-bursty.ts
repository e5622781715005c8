import type { PermitStorage, SmoothState } from './permit-storage.js';

/**
 * burstyStorage returns Guava's SmoothBursty model: idle time stores permits at the stable rate,
 * up to `maxBurstSeconds` worth, and stored permits are free to spend. A new limiter starts empty.
 */
export function burstyStorage(maxBurstSeconds: number): PermitStorage {
  return {
    maxPermitsAt: (permitsPerSecond) => maxBurstSeconds * permitsPerSecond,
    // From an infinite maximum (an infinite rate) the store is full; from 0 (a new limiter) it stays empty.
    carriedPermits: (storedPermits, oldMaxPermits, newMaxPermits) => {
      if (oldMaxPermits === Infinity) return newMaxPermits;
      if (oldMaxPermits === 0) return 0;
      return (storedPermits * newMaxPermits) / oldMaxPermits;
    },
    storedPermitsWaitMicros: () => 0n,
    coolDownIntervalMicros: (state: SmoothState) => state.stableIntervalMicros,
  };
}
