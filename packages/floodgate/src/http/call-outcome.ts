/**
 * How an admitted HTTP request's end is told to a concurrency limit: what a response says about
 * the service's load.
 */
import type { CallOutcome } from '../core/adaptive/adaptive-limit.js';

/** CallEnding is what an adapter saw of an admitted request's end. */
export interface CallEnding {
  /** The response's status (a framework answers a thrown error with 500 or the error's own status). */
  readonly statusCode: number;
  /** False when the connection closed before the response was complete (the client left). */
  readonly completed: boolean;
  /** What the handler threw, when the adapter saw it (Koa, Fastify and Hono do; node and Express do not). */
  readonly error?: unknown;
}

/** The statuses that say the service (or one it calls) is overloaded or too slow. */
const OVERLOAD_STATUSES: ReadonlySet<number> = new Set([429, 503, 504]);

/** Error codes of timeouts: node's sockets, undici's fetch, and floodgate's own waits and stores. */
const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'WAIT_TIMEOUT',
  'STORE_TIMEOUT',
]);

/**
 * callOutcome returns what an admitted request's end tells a concurrency limit:
 * - `drop` (back the limit off) for a thrown timeout ({@link isTimeoutError}) and for a response
 *   of 429, 503 or 504: the service, or one it depends on, is overloaded or too slow;
 * - `ignore` (no sample) when the client left before the response was complete, and for any other
 *   error: a thrown one, or a 5xx response (a fast failure is no measure of latency);
 * - `success` (a latency sample) otherwise, 4xx answers included: the work was done.
 */
export function callOutcome(ending: CallEnding): CallOutcome {
  if (ending.error !== undefined && isTimeoutError(ending.error)) return 'drop';
  if (!ending.completed) return 'ignore';
  if (OVERLOAD_STATUSES.has(ending.statusCode)) return 'drop';
  if (ending.error !== undefined || ending.statusCode >= 500) return 'ignore';
  return 'success';
}

/**
 * isTimeoutError tells whether `error` is a timeout: a `TimeoutError` (what `AbortSignal.timeout`
 * aborts with), an error whose `code` is a known timeout (`ETIMEDOUT`, undici's `UND_ERR_*_TIMEOUT`,
 * floodgate's `WAIT_TIMEOUT` and `STORE_TIMEOUT`), or one whose `status`/`statusCode` is 504.
 */
export function isTimeoutError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; status?: unknown; statusCode?: unknown };
  if (e.name === 'TimeoutError') return true;
  if (typeof e.code === 'string' && TIMEOUT_CODES.has(e.code)) return true;
  return e.status === 504 || e.statusCode === 504;
}
