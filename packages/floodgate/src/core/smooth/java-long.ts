/**
 * Java `long` arithmetic on bigints. Guava keeps every moment and wait of its RateLimiter in a
 * signed 64-bit `long`, mixing saturating adds (LongMath.saturatedAdd), plain adds that wrap on
 * overflow, and casts from `double` that truncate. The smooth limiters do the same here, so that
 * results match Guava to the microsecond even past 2^53.
 */

/** LONG_MAX returns Java's `Long.MAX_VALUE`, 2^63 - 1. */
export const LONG_MAX = (1n << 63n) - 1n;

/** LONG_MIN returns Java's `Long.MIN_VALUE`, -2^63. */
export const LONG_MIN = -(1n << 63n);

const TWO_TO_63 = 2 ** 63;

/**
 * longFromDouble returns `x` as Java's `(long) x` would: truncated toward zero, NaN as 0, and
 * values beyond the range (including the infinities) clamped to {@link LONG_MIN} or {@link LONG_MAX}.
 */
export function longFromDouble(x: number): bigint {
  if (Number.isNaN(x)) return 0n;
  if (x >= TWO_TO_63) return LONG_MAX;
  if (x <= -TWO_TO_63) return LONG_MIN;
  return BigInt(Math.trunc(x));
}

/** wrappingAdd returns `a + b` as Java's `long` addition does: wrapped into 64 bits on overflow. */
export function wrappingAdd(a: bigint, b: bigint): bigint {
  return BigInt.asIntN(64, a + b);
}

/** wrappingSubtract returns `a - b` as Java's `long` subtraction does: wrapped into 64 bits on overflow. */
export function wrappingSubtract(a: bigint, b: bigint): bigint {
  return BigInt.asIntN(64, a - b);
}

/** saturatedAdd returns `a + b` clamped to [{@link LONG_MIN}, {@link LONG_MAX}], like Guava's `LongMath.saturatedAdd`. */
export function saturatedAdd(a: bigint, b: bigint): bigint {
  const sum = a + b;
  if (sum > LONG_MAX) return LONG_MAX;
  if (sum < LONG_MIN) return LONG_MIN;
  return sum;
}
