/**
 * Stable machine-readable codes carried by every {@link FloodgateError}.
 *
 * - `INVALID_OPTION`: a constructor or factory option is missing, of the wrong type, or out of range.
 * - `INVALID_COST`: a request's cost is negative, not finite, or not allowed by the policy.
 * - `COST_EXCEEDS_LIMIT`: a request's cost is larger than the policy could ever admit at once.
 * - `INVALID_KEY`: a key is not a string or is longer than the store accepts.
 * - `STORE_NOT_SYNC`: a synchronous method was called on a limiter whose store is asynchronous.
 * - `STORE_ERROR`: the store's backend (Redis) failed the operation: connection, script or server error.
 * - `STORE_REPLY`: the backend answered something other than what the operation promises.
 * - `STORE_TIMEOUT`: the backend did not answer within the store's `timeoutMs`.
 * - `WAIT_TIMEOUT`: a wait for admission or a permit would exceed, or has exceeded, `maxWaitMs`.
 * - `ABORTED`: the caller's `AbortSignal` fired while the request waited; `cause` is the signal's reason.
 * - `QUEUE_FULL`: a request could not pass at once and the queue it would wait in was full.
 * - `LIMITER_CLOSED`: a limiter was used after `close()` released its policy's table.
 * - `PERMIT_RELEASED`: a concurrency permit was released a second time (nothing was counted again).
 */
export type FloodgateErrorCode =
  | 'INVALID_OPTION'
  | 'INVALID_COST'
  | 'COST_EXCEEDS_LIMIT'
  | 'INVALID_KEY'
  | 'STORE_NOT_SYNC'
  | 'STORE_ERROR'
  | 'STORE_REPLY'
  | 'STORE_TIMEOUT'
  | 'WAIT_TIMEOUT'
  | 'ABORTED'
  | 'QUEUE_FULL'
  | 'LIMITER_CLOSED'
  | 'PERMIT_RELEASED';

/**
 * FloodgateError is the one error class floodgate throws for bad input. `code` is stable across
 * versions; `option` names the offending option or argument when there is one.
 *
 * @example
 * try { tokenBucket({ capacity: 0, refillPerSecond: 1 }); }
 * catch (e) { if (e instanceof FloodgateError && e.code === 'INVALID_OPTION') console.log(e.option); }
 */
export class FloodgateError extends Error {
  /** The stable code naming the kind of problem. */
  readonly code: FloodgateErrorCode;
  /** The option or argument at fault, as a dotted path (`tokenBucket.capacity`), when known. */
  readonly option: string | undefined;

  constructor(code: FloodgateErrorCode, message: string, option?: string) {
    super(message);
    this.name = 'FloodgateError';
    this.code = code;
    this.option = option;
  }
}

/** describeValue returns a short, safe rendering of a bad value for an error message. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null) {
    return String(value);
  }
  return typeof value;
}
