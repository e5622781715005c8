import type { PermitStorage } from './permit-storage.js';

/**
 * BurstyStorage is Guava's SmoothBursty model: idle time stores permits at the stable rate, up to
 * `maxBurstSeconds` worth, and stored permits are free to spend. A new limiter starts empty.
 */
export class BurstyStorage implements PermitStorage {
  maxPermits = 0;
  private stableIntervalMicros = 0;

  /** Creates the model; `maxBurstSeconds` is how many seconds of permits may be stored. */
  constructor(private readonly maxBurstSeconds: number) {}

  /**
   * applyRate returns the stored permits scaled by new max / old max. Coming from an infinite
   * maximum (an infinite rate) the store is full; coming from 0 (a new limiter) it stays empty.
   */
  applyRate(permitsPerSecond: number, stableIntervalMicros: number, storedPermits: number): number {
    const oldMaxPermits = this.maxPermits;
    this.stableIntervalMicros = stableIntervalMicros;
    this.maxPermits = this.maxBurstSeconds * permitsPerSecond;
    if (oldMaxPermits === Infinity) return this.maxPermits;
    if (oldMaxPermits === 0) return 0;
    return (storedPermits * this.maxPermits) / oldMaxPermits;
  }

  /** storedPermitsWaitMicros returns 0: stored permits cost nothing in a bursty limiter. */
  storedPermitsWaitMicros(): bigint {
    return 0n;
  }

  /** coolDownIntervalMicros returns the stable interval: idle time stores permits at the rate. */
  coolDownIntervalMicros(): number {
    return this.stableIntervalMicros;
  }
}
