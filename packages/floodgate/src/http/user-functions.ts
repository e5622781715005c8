/**
 * Calling the functions a user gives in the HTTP options (skip, cost, identity, limiter chooser)
 * for one request: what they return is checked, and what they throw becomes an
 * {@link OptionFunctionError} naming the option and the route.
 */
import { Limiter } from '../limiter.js';
import type { CheckedDimension } from './options.js';
import { returnedWrong, threw } from './option-error.js';
import type { HttpRequest } from './request.js';

/** routeOf returns the request's route for an error message, or undefined when even that fails. */
function routeOf(req: HttpRequest<unknown>): string | undefined {
  try {
    return req.route;
  } catch {
    return undefined;
  }
}

/** skipOf returns what the `skip` option says of `req`: true or false, else it throws an {@link OptionFunctionError}. */
export function skipOf<Req>(skip: (req: HttpRequest<Req>) => boolean, req: HttpRequest<Req>): boolean {
  let value: unknown;
  try {
    value = skip(req);
  } catch (err) {
    throw threw('skip', routeOf(req), err);
  }
  if (value === true || value === false) return value;
  throw returnedWrong('skip', routeOf(req), 'true or false', value);
}

/**
 * costOf returns the `cost` option's answer for `req`: a finite number from 0 (a number, never a
 * numeric string: `"3"` is refused, not read as 3), else it throws `INVALID_COST`.
 */
export function costOf<Req>(cost: (req: HttpRequest<Req>) => number, req: HttpRequest<Req>): number {
  let value: unknown;
  try {
    value = cost(req);
  } catch (err) {
    throw threw('cost', routeOf(req), err);
  }
  if (typeof value === 'number' && value >= 0 && value < Infinity) return value;
  throw returnedWrong('cost', routeOf(req), 'a finite number of at least 0', value);
}

/** identityOf returns the dimension's identity for `req`: a string, or undefined for none. */
export function identityOf<Req>(dimension: CheckedDimension<Req>, req: HttpRequest<Req>): string | undefined {
  let value: unknown;
  try {
    value = dimension.key(req);
  } catch (err) {
    throw threw(dimension.keyOption, routeOf(req), err);
  }
  if (typeof value === 'string' || value === undefined) return value;
  throw returnedWrong(dimension.keyOption, routeOf(req), 'a string or undefined', value);
}

/** chosenLimiter returns the limiter a dimension's chooser picks for `req`, or undefined for none. */
export function chosenLimiter<Req>(dimension: CheckedDimension<Req>, req: HttpRequest<Req>): Limiter | undefined {
  let value: unknown;
  try {
    value = dimension.choose!(req);
  } catch (err) {
    throw threw(dimension.limiterOption, routeOf(req), err);
  }
  if (value instanceof Limiter || value === undefined) return value;
  throw returnedWrong(dimension.limiterOption, routeOf(req), 'a Limiter or undefined', value);
}
