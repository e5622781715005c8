import { FloodgateError, describeValue } from './errors.js';

/**
 * positiveNumber returns `value` when it is a finite number above zero, and throws an
 * `INVALID_OPTION` {@link FloodgateError} naming `option` otherwise.
 */
export function positiveNumber(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a finite number greater than 0, got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * positiveInteger returns `value` when it is a whole number of at least `min` (default 1), and
 * throws an `INVALID_OPTION` {@link FloodgateError} naming `option` otherwise.
 */
export function positiveInteger(value: unknown, option: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a whole number of at least ${min}, got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * durationMs returns `value` when it is a whole number of milliseconds of at least 1, and throws an
 * `INVALID_OPTION` {@link FloodgateError} naming `option` otherwise (windows under 1 ms are refused).
 */
export function durationMs(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a whole number of milliseconds, at least 1, got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * requireObject returns `value` when it is a plain object, and throws an `INVALID_OPTION`
 * {@link FloodgateError} naming `option` otherwise.
 */
export function requireObject<T extends object>(value: unknown, option: string): T {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be an options object, got ${describeValue(value)}`,
      option,
    );
  }
  return value as T;
}

/**
 * checkCost returns `cost` when it is a finite number of at least 0 and at most `limit`. It throws
 * `INVALID_COST` for negative, NaN or infinite costs (and fractions where `wholeOnly`), and
 * `COST_EXCEEDS_LIMIT` for a cost the policy could never admit at once.
 */
export function checkCost(cost: number, limit: number, policy: string, wholeOnly = false): number {
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || (wholeOnly && !Number.isInteger(cost))) {
    const what = wholeOnly ? 'a whole number' : 'a finite number';
    throw new FloodgateError(
      'INVALID_COST',
      `cost must be ${what} of at least 0 for ${policy}, got ${describeValue(cost)}`,
      'cost',
    );
  }
  if (cost > limit) {
    throw new FloodgateError(
      'COST_EXCEEDS_LIMIT',
      `cost ${cost} can never be admitted by ${policy}, whose limit is ${limit}`,
      'cost',
    );
  }
  return cost;
}
