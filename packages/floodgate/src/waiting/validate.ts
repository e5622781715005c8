import { FloodgateError, describeValue } from '../core/errors.js';

/**
 * checkMaxWaitMs returns `value` as a wait bound in ms: undefined means Infinity (wait as long as
 * it takes); otherwise a number of at least 0, Infinity allowed. Anything else throws an
 * `INVALID_OPTION` {@link FloodgateError} naming `option`.
 */
export function checkMaxWaitMs(value: unknown, option: string): number {
  if (value === undefined) return Infinity;
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a number of ms of at least 0 (Infinity: no bound), got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * checkQueueBound returns `value` as a bound on waiters: undefined means `fallback`; otherwise a
 * whole number of at least 0, or Infinity. Anything else throws an `INVALID_OPTION`
 * {@link FloodgateError} naming `option`.
 */
export function checkQueueBound(value: unknown, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value === Infinity || (Number.isSafeInteger(value) && value >= 0))) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a whole number of at least 0, or Infinity, got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * checkSignal returns `value` when it is undefined or an AbortSignal (anything with `aborted`
 * and `addEventListener`), and throws an `INVALID_OPTION` {@link FloodgateError} naming `option`
 * otherwise.
 */
export function checkSignal(value: unknown, option: string): AbortSignal | undefined {
  if (value === undefined) return undefined;
  const signal = value as Partial<AbortSignal> | null;
  if (
    typeof signal !== 'object' ||
    signal === null ||
    typeof signal.aborted !== 'boolean' ||
    typeof signal.addEventListener !== 'function'
  ) {
    throw new FloodgateError('INVALID_OPTION', `${option} must be an AbortSignal, got ${describeValue(value)}`, option);
  }
  return value as AbortSignal;
}
