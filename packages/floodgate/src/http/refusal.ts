/**
 * Custom refusals: the `message` and `statusCode` options, which replace the problem body and the
 * 429 of a request refused by a limit, checked once.
 */
import { FloodgateError, describeValue } from '../core/errors.js';

/** RefusalResponse is a refusal's status, body and content type, as the `message` and `statusCode` options make it. */
export interface RefusalResponse {
  readonly statusCode: number;
  /** The body; undefined keeps the problem+json body. */
  readonly body: string | undefined;
  readonly contentType: string | undefined;
}

/**
 * refusalOf returns the checked refusal of the `message` and `statusCode` options (undefined when
 * neither is given): a string message is sent as `text/plain`, an object as JSON; the status is a
 * whole number from 400 to 599. Anything else is an `INVALID_OPTION` error naming the option.
 */
export function refusalOf(message: unknown, statusCode: unknown): RefusalResponse | undefined {
  if (message === undefined && statusCode === undefined) return undefined;
  const status = statusCode ?? 429;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `statusCode must be a whole number from 400 to 599, got ${describeValue(status)}`,
      'statusCode',
    );
  }
  if (message === undefined) return { statusCode: status, body: undefined, contentType: undefined };
  if (typeof message === 'string')
    return { statusCode: status, body: message, contentType: 'text/plain; charset=utf-8' };
  if (typeof message === 'object' && message !== null) {
    let body: string | undefined;
    try {
      body = JSON.stringify(message);
    } catch {
      body = undefined;
    }
    if (body !== undefined) return { statusCode: status, body, contentType: 'application/json; charset=utf-8' };
  }
  throw new FloodgateError(
    'INVALID_OPTION',
    `message must be a string or an object that JSON.stringify can write, got ${describeValue(message)}`,
    'message',
  );
}
