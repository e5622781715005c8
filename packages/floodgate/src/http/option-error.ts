/**
 * The typed error of a user-supplied function (identity, cost, limiter chooser, skip) that threw
 * or returned something it must not, for one request.
 */
import { FloodgateError, describeValue } from '../core/errors.js';

/**
 * OptionFunctionError is the {@link FloodgateError} a request gets when one of the functions given
 * in the HTTP options failed for it: `code` is `INVALID_COST` for a cost that is not a finite
 * number from 0, else `INVALID_OPTION`; `option` names the option (`cost`, `skip`,
 * `dimensions[1].key`, `dimensions[0].limiter`); `route` is the request's route and `cause` what
 * the function threw, when it threw.
 */
export class OptionFunctionError extends FloodgateError {
  /** The route of the request the function failed for. */
  readonly route: string | undefined;

  constructor(
    code: 'INVALID_OPTION' | 'INVALID_COST',
    message: string,
    where: { option: string; route: string | undefined; cause?: unknown },
  ) {
    super(code, where.route === undefined ? message : `${message} (route ${describeValue(where.route)})`, where.option);
    this.name = 'OptionFunctionError';
    this.route = where.route;
    if ('cause' in where)
      Object.defineProperty(this, 'cause', {
        value: where.cause,
        enumerable: false,
        writable: true,
        configurable: true,
      });
  }
}

/** threw returns the error for an option function that threw `cause` on a request to `route`. */
export function threw(option: string, route: string | undefined, cause: unknown): OptionFunctionError {
  const what = cause instanceof Error ? cause.message : describeValue(cause);
  return new OptionFunctionError('INVALID_OPTION', `the ${option} option threw: ${what}`, { option, route, cause });
}

/** returnedWrong returns the error for an option function that returned `got` where `expected` was due. */
export function returnedWrong(
  option: string,
  route: string | undefined,
  expected: string,
  got: unknown,
): OptionFunctionError {
  const code = option === 'cost' ? 'INVALID_COST' : 'INVALID_OPTION';
  return new OptionFunctionError(code, `the ${option} option must return ${expected}, got ${describeValue(got)}`, {
    option,
    route,
  });
}
