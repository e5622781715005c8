/**
 * SmoothState is everything a smooth limiter remembers, Guava's four fields: the permits stored by
 * idle time, the most that may be stored at the current rate, the stable interval (1e6 / rate),
 * and the next-free moment as a Java long of µs (the moment the next request may start).
 */
export interface SmoothState {
  readonly storedPermits: number;
  readonly maxPermits: number;
  readonly stableIntervalMicros: number;
  readonly nextFreeMicros: bigint;
}

/**
 * PermitStorage is the part of a smooth limiter that differs between Guava's two models: how many
 * unused permits may be stored, what spending them costs, and how much idle time stores one. It
 * holds no state of its own: everything it computes follows from the model's fixed parameters and
 * the {@link SmoothState} it is given, in microseconds, with Java's double semantics (NaN and the
 * infinities included), so a state kept elsewhere (in Redis) follows the same rules.
 */
export interface PermitStorage {
  /** maxPermitsAt returns the most permits that may be stored at `permitsPerSecond` (whose interval is `stableIntervalMicros`). */
  maxPermitsAt(permitsPerSecond: number, stableIntervalMicros: number): number;

  /**
   * carriedPermits returns the stored permits carried over to a new rate: `storedPermits` scaled
   * by new max / old max, with the model's own answer for an old maximum of 0 (a new limiter) or
   * Infinity (an infinite rate).
   */
  carriedPermits(storedPermits: number, oldMaxPermits: number, newMaxPermits: number): number;

  /**
   * storedPermitsWaitMicros returns the time, in whole microseconds as a Java long, that taking
   * `permitsToTake` of the state's stored permits costs (0 for a bursty limiter).
   */
  storedPermitsWaitMicros(state: SmoothState, permitsToTake: number): bigint;

  /** coolDownIntervalMicros returns how many microseconds of idle time store one permit in `state`. */
  coolDownIntervalMicros(state: SmoothState): number;
}
