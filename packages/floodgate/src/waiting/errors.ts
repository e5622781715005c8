import { FloodgateError } from '../core/errors.js';

/** Settle resolves a waiter's promise with a value, or adopts the outcome of another promise. */
export type Settle<T> = (value: T | PromiseLike<T>) => void;

/**
 * rejectVia rejects the promise whose resolve function is `settle`, by resolving it with a
 * rejected promise. Waiters keep only their resolve function: a reject function would cost 56
 * more bytes for every waiter, on a path where rejecting is the exception. The rejection is
 * handled within the same microtask turn, so it never reports as unhandled on its own.
 */
export function rejectVia<T>(settle: Settle<T>, error: Error): void {
  settle(Promise.reject(error));
}

/** asError returns `value` when it is an Error, else an Error saying what was thrown instead. */
export function asError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(`failed with a non-Error value: ${String(value)}`, { cause: value });
}

/** acquireOn names an `acquire` on `key` in error messages (long keys cut to 40 characters). */
export function acquireOn(key: string): string {
  return `acquire on key ${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)}`;
}

/** waitTimeout returns the `WAIT_TIMEOUT` error for a wait on `what` longer than `maxWaitMs` (when known). */
export function waitTimeout(what: string, maxWaitMs: number | undefined): FloodgateError {
  const limit = maxWaitMs === undefined ? 'maxWaitMs' : `maxWaitMs (${maxWaitMs} ms)`;
  return new FloodgateError(
    'WAIT_TIMEOUT',
    `${what}: not served within ${limit}; raise maxWaitMs, or lower the load on it`,
    'maxWaitMs',
  );
}

/** queueFull returns the `QUEUE_FULL` error for a queue on `what` already holding `limit` waiters. */
export function queueFull(what: string, option: string, limit: number): FloodgateError {
  return new FloodgateError(
    'QUEUE_FULL',
    `${what}: could not pass at once and ${limit} already wait (${option}); retry later, or raise ${option}`,
    option,
  );
}

/**
 * aborted returns the `ABORTED` error for a wait that `signal` ended. Its `cause` is the signal's
 * reason (an `AbortError` DOMException from `controller.abort()`, a `TimeoutError` from
 * `AbortSignal.timeout()`, or whatever the caller passed), so callers can tell why, while the
 * rejection is always a {@link FloodgateError}.
 */
export function aborted(what: string, signal: AbortSignal): FloodgateError {
  const error = new FloodgateError('ABORTED', `${what}: the wait was aborted by its signal`, 'signal');
  // Installed like the `cause` of `new Error(message, { cause })`: own, non-enumerable.
  Object.defineProperty(error, 'cause', { value: signal.reason, writable: true, configurable: true });
  return error;
}
