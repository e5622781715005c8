import { longFromDouble, wrappingAdd } from './java-long.js';
import type { PermitStorage } from './permit-storage.js';

/**
 * WarmingUpStorage is Guava's SmoothWarmingUp model. The interval a stored permit costs is the
 * stable interval up to `thresholdPermits` stored, then grows linearly to `coldFactor` times it at
 * `maxPermits`; spending stored permits costs the area under that line. The sizes are chosen so
 * that going from full to the threshold takes the warm-up period at saturating demand, and the
 * threshold to empty half of it. A new limiter starts cold, with every storable permit stored.
 */
export class WarmingUpStorage implements PermitStorage {
  maxPermits = 0;
  private thresholdPermits = 0;
  private slope = 0;
  private stableIntervalMicros = 0;

  /** Creates the model for a warm-up of `warmupMicros` (a Java long, as a double) and a cold factor. */
  constructor(
    private readonly warmupMicros: number,
    private readonly coldFactor: number,
  ) {}

  /**
   * applyRate recomputes the threshold, maximum and slope, and returns the stored permits scaled by
   * new max / old max; from an infinite maximum the store empties, from 0 (a new limiter) it fills.
   */
  applyRate(_permitsPerSecond: number, stableIntervalMicros: number, storedPermits: number): number {
    const oldMaxPermits = this.maxPermits;
    const coldIntervalMicros = stableIntervalMicros * this.coldFactor;
    this.stableIntervalMicros = stableIntervalMicros;
    this.thresholdPermits = (0.5 * this.warmupMicros) / stableIntervalMicros;
    this.maxPermits = this.thresholdPermits + (2.0 * this.warmupMicros) / (stableIntervalMicros + coldIntervalMicros);
    this.slope = (coldIntervalMicros - stableIntervalMicros) / (this.maxPermits - this.thresholdPermits);
    // Scaling from an infinite maximum would give NaN; Guava starts such a limiter over, empty.
    if (oldMaxPermits === Infinity) return 0;
    if (oldMaxPermits === 0) return this.maxPermits;
    return (storedPermits * this.maxPermits) / oldMaxPermits;
  }

  /**
   * storedPermitsWaitMicros returns the area under the interval line between `storedPermits` and
   * `storedPermits - permitsToTake`: a trapezoid above the threshold, a rectangle below it. Each
   * part is truncated to whole microseconds and the two are added with Java's wrapping `long` add.
   */
  storedPermitsWaitMicros(storedPermits: number, permitsToTake: number): bigint {
    const aboveThreshold = storedPermits - this.thresholdPermits;
    let trapezoidMicros = 0n;
    let belowToTake = permitsToTake;
    if (aboveThreshold > 0) {
      const aboveToTake = Math.min(aboveThreshold, permitsToTake);
      const sidesMicros = this.intervalAtMicros(aboveThreshold) + this.intervalAtMicros(aboveThreshold - aboveToTake);
      trapezoidMicros = longFromDouble((aboveToTake * sidesMicros) / 2.0);
      belowToTake -= aboveToTake;
    }
    return wrappingAdd(trapezoidMicros, longFromDouble(this.stableIntervalMicros * belowToTake));
  }

  /** coolDownIntervalMicros returns warm-up / max permits, so an idle warm-up period fills the store. */
  coolDownIntervalMicros(): number {
    return this.warmupMicros / this.maxPermits;
  }

  /** The interval one permit costs with `permitsAboveThreshold` stored above the threshold. */
  private intervalAtMicros(permitsAboveThreshold: number): number {
    return this.stableIntervalMicros + permitsAboveThreshold * this.slope;
  }
}
