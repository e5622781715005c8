/**
 * PermitStorage is the part of a smooth limiter that differs between Guava's two models: how many
 * unused permits may be stored, what spending them costs, and how much idle time stores one.
 * {@link SmoothRateLimiter} owns the stored count and the next-free moment; a storage only does the
 * arithmetic, in microseconds, with Java's double semantics (NaN and the infinities included).
 */
export interface PermitStorage {
  /** The most permits that may be stored at the current rate; 0 until the first {@link applyRate}. */
  readonly maxPermits: number;

  /**
   * applyRate adopts a new rate and returns the stored permits carried over to it. `storedPermits`
   * is the count under the old rate; the answer is rescaled to the new maximum.
   */
  applyRate(permitsPerSecond: number, stableIntervalMicros: number, storedPermits: number): number;

  /**
   * storedPermitsWaitMicros returns the time, in whole microseconds as a Java long, that taking
   * `permitsToTake` of the `storedPermits` stored permits costs (0 for a bursty limiter).
   */
  storedPermitsWaitMicros(storedPermits: number, permitsToTake: number): bigint;

  /** coolDownIntervalMicros returns how many microseconds of idle time store one permit. */
  coolDownIntervalMicros(): number;
}
