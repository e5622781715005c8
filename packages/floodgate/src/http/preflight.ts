/** CORS preflight requests, which browsers send on their own before cross-origin requests. */
import type { HttpRequest } from './request.js';

/**
 * isPreflight returns whether `req` is a CORS preflight: an `OPTIONS` request carrying `Origin`
 * and `Access-Control-Request-Method` (the Fetch standard's definition). A plain `OPTIONS`
 * request without them is an ordinary request.
 */
export function isPreflight(req: HttpRequest<unknown>): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.header('access-control-request-method') !== undefined &&
    req.header('origin') !== undefined
  );
}

/**
 * withPreflightExempt returns a `skip` function that passes CORS preflights untouched and asks
 * `skip` (when given) about every other request.
 */
export function withPreflightExempt<Req>(
  skip: ((req: HttpRequest<Req>) => boolean) | undefined,
): (req: HttpRequest<Req>) => boolean {
  if (skip === undefined) return isPreflight;
  return function skipPreflightOr(req) {
    return isPreflight(req) || skip(req);
  };
}
