import { longFromDouble, wrappingAdd } from './java-long.js';
import type { PermitStorage, SmoothState } from './permit-storage.js';

/** WarmupShape is where a warming-up limiter's interval line starts rising, and how steeply. */
interface WarmupShape {
  readonly thresholdPermits: number;
  readonly slope: number;
}

/**
 * warmingUpStorage returns Guava's SmoothWarmingUp model for a warm-up of `warmupMicros` (a Java
 * long, as a double) and a cold factor. The interval a stored permit costs is the stable interval
 * up to `thresholdPermits` stored, then grows linearly to `coldFactor` times it at `maxPermits`;
 * spending stored permits costs the area under that line. The sizes are chosen so that going from
 * full to the threshold takes the warm-up period at saturating demand, and the threshold to empty
 * half of it. A new limiter starts cold, with every storable permit stored.
 */
export function warmingUpStorage(warmupMicros: number, coldFactor: number): PermitStorage {
  const thresholdAt = (stableIntervalMicros: number): number => (0.5 * warmupMicros) / stableIntervalMicros;
  const shapeOf = (state: SmoothState): WarmupShape => {
    const stable = state.stableIntervalMicros;
    const thresholdPermits = thresholdAt(stable);
    // Guava's slope, from the maximum it has just computed: the same doubles as state.maxPermits.
    return { thresholdPermits, slope: (stable * coldFactor - stable) / (state.maxPermits - thresholdPermits) };
  };
  return {
    maxPermitsAt: (_permitsPerSecond, stable) =>
      thresholdAt(stable) + (2.0 * warmupMicros) / (stable + stable * coldFactor),
    // Scaling from an infinite maximum would give NaN; Guava starts such a limiter over, empty.
    carriedPermits: (storedPermits, oldMaxPermits, newMaxPermits) => {
      if (oldMaxPermits === Infinity) return 0;
      if (oldMaxPermits === 0) return newMaxPermits;
      return (storedPermits * newMaxPermits) / oldMaxPermits;
    },
    storedPermitsWaitMicros: (state, permitsToTake) => warmupWaitMicros(state, shapeOf(state), permitsToTake),
    coolDownIntervalMicros: (state) => warmupMicros / state.maxPermits,
  };
}

/**
 * The area under the interval line between the stored permits and that less `permitsToTake`: a
 * trapezoid above the threshold, a rectangle below it. Each part is truncated to whole
 * microseconds and the two are added with Java's wrapping `long` add.
 */
function warmupWaitMicros(state: SmoothState, shape: WarmupShape, permitsToTake: number): bigint {
  const stable = state.stableIntervalMicros;
  const intervalAt = (permitsAboveThreshold: number): number => stable + permitsAboveThreshold * shape.slope;
  const aboveThreshold = state.storedPermits - shape.thresholdPermits;
  let trapezoidMicros = 0n;
  let belowToTake = permitsToTake;
  if (aboveThreshold > 0) {
    const aboveToTake = Math.min(aboveThreshold, permitsToTake);
    const sidesMicros = intervalAt(aboveThreshold) + intervalAt(aboveThreshold - aboveToTake);
    trapezoidMicros = longFromDouble((aboveToTake * sidesMicros) / 2.0);
    belowToTake -= aboveToTake;
  }
  return wrappingAdd(trapezoidMicros, longFromDouble(stable * belowToTake));
}
