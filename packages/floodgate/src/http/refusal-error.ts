/** The error a refusal becomes where a framework's idiom is to answer it through its error handler. */
import { FIELD } from './headers.js';
import type { Verdict } from './verdict.js';

/**
 * RateLimitedError is a refused request as an error, for frameworks whose rate limiters hand
 * refusals to the error handler (Fastify's `setErrorHandler`, as @fastify/rate-limit does):
 * `statusCode` is the status to answer (429, or 503 when the store is full or failing closed, 500
 * when an option function failed), `problem` the RFC 9457 body floodgate would have sent, and
 * `retryAfterSeconds` the `Retry-After` value when there is one. The rate-limit headers are
 * already set on the response when the handler receives it.
 *
 * @example
 * app.setErrorHandler((err, request, reply) => {
 *   if (err instanceof RateLimitedError) return reply.code(err.statusCode).type('application/problem+json').send(err.problem);
 *   return reply.send(err);
 * });
 */
export class RateLimitedError extends Error {
  /** The stable code of every refusal: `FLOODGATE_RATE_LIMITED`. */
  readonly code = 'FLOODGATE_RATE_LIMITED';
  /** The status to answer: 429, 503 or 500. */
  readonly statusCode: number;
  /** The `application/problem+json` body floodgate sends when it answers itself. */
  readonly problem: string;
  /** The `Retry-After` header's value in seconds, when the refusal has one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(verdict: Verdict) {
    super(messageOf(verdict));
    this.name = 'RateLimitedError';
    this.statusCode = verdict.statusCode;
    this.problem = verdict.body ?? '';
    const retryAfter = verdict.headers.find(([name]) => name === FIELD.retryAfter)?.[1];
    this.retryAfterSeconds = retryAfter === undefined ? undefined : Number(retryAfter);
  }
}

function messageOf(verdict: Verdict): string {
  if (verdict.statusCode === 429) return 'rate limit exceeded';
  if (verdict.statusCode === 503) return 'the rate limit could not be decided: capacity is temporarily reduced';
  return 'the rate limit could not be decided';
}
