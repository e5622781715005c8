/**
 * The endpoint for nginx's `auth_request` (`/v1/auth`): a decision request read from `Floodgate-*`
 * headers that the proxy sets from its own variables, answered in the only statuses
 * `auth_request` tells apart (2xx admits, 403 refuses; anything else is nginx's 500).
 *
 * The headers:
 * - `Floodgate-Domain: <domain>` (required);
 * - `Floodgate-Descriptor-<n>: <key>=<value>`, the first entry of descriptor `n` (1 to 64), and
 *   `Floodgate-Descriptor-<n>-<e>: <key>=<value>` its entry `e` (1 to 32). Descriptors and entries
 *   are taken in number order, and numbers may be missing: nginx sends no header whose value is
 *   empty, which is how a configuration leaves a descriptor out (an API key the client did not
 *   send). The key runs to the first `=`; the value is the rest, byte for byte (latin1), so a value
 *   may hold `=`, `,` or quotes.
 *
 * The answer: 204 with the decision's headers when admitted; 403 when refused, with the decision's
 * headers, `Floodgate-Status: 429` and the problem+json body as `Floodgate-Problem`, which the
 * proxy sends on as the body of its 429. A value over {@link REQUEST_LIMITS}' text length is the
 * client's doing (an API key of 2,000 characters): 403 with `Floodgate-Status: 400` and a 400
 * problem. Malformed headers are the proxy's configuration's doing: 400 with a JSON error naming
 * the header, which nginx turns into its 500, as it does a store failure (503).
 */
import { problemBody } from 'floodgate/http';
import { policyNames } from './headers.js';
import { DecisionError, parseDecisionRequest, REQUEST_LIMITS, type DecisionRequest } from './request.js';
import type { DecisionResult } from './service.js';

/** AUTH_FIELD names the headers of the `auth_request` endpoint, lower-case as node reads them. */
export const AUTH_FIELD = Object.freeze({
  domain: 'floodgate-domain',
  descriptorPrefix: 'floodgate-descriptor-',
  status: 'floodgate-status',
  problem: 'floodgate-problem',
});

/** AuthRequest is what the headers ask: a decision request (no descriptors: nothing to limit), or a value the client made too long. */
export type AuthRequest =
  | { readonly kind: 'decide'; readonly request: DecisionRequest | undefined }
  | { readonly kind: 'invalid-value'; readonly header: string };

/** AuthAnswer is the status and headers `/v1/auth` answers with; it has no body. */
export interface AuthAnswer {
  readonly status: 204 | 403;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

const DESCRIPTOR_NAME = /^(\d{1,2})(?:-(\d{1,2}))?$/;

/** The 400 problem of a value over the length the service reads: it names no header (they are the proxy's). */
const INVALID_VALUE_PROBLEM = JSON.stringify({
  type: 'about:blank',
  title: 'Bad Request',
  status: 400,
  detail: `a value this request is rate limited by is over ${REQUEST_LIMITS.maxTextLength} characters`,
});

function misconfigured(header: string, message: string): DecisionError {
  return new DecisionError('INVALID_REQUEST', `header ${header}: ${message}`, header);
}

interface Entry {
  readonly descriptor: number;
  readonly entry: number;
  readonly key: string;
  readonly value: string;
}

/** entryOf reads one `Floodgate-Descriptor-*` header, or returns undefined when its value is too long. */
function entryOf(name: string, values: readonly string[]): Entry | undefined {
  const numbers = DESCRIPTOR_NAME.exec(name.slice(AUTH_FIELD.descriptorPrefix.length));
  const descriptor = Number(numbers?.[1] ?? 0);
  const entry = Number(numbers?.[2] ?? 1);
  if (descriptor < 1 || descriptor > REQUEST_LIMITS.maxDescriptors || entry < 1 || entry > REQUEST_LIMITS.maxEntries)
    throw misconfigured(
      name,
      `expected Floodgate-Descriptor-<n> (n from 1 to ${REQUEST_LIMITS.maxDescriptors}) or Floodgate-Descriptor-<n>-<entry> (entry from 1 to ${REQUEST_LIMITS.maxEntries})`,
    );
  if (values.length !== 1) throw misconfigured(name, 'is sent more than once; set it once');
  const text = values[0]!;
  const at = text.indexOf('=');
  if (at <= 0) throw misconfigured(name, `is ${JSON.stringify(text.slice(0, 64))}; expected <key>=<value>`);
  const value = text.slice(at + 1);
  if (value.length > REQUEST_LIMITS.maxTextLength) return undefined;
  return { descriptor, entry, key: text.slice(0, at), value };
}

/**
 * readAuthRequest returns the decision request the `Floodgate-*` headers of `headers` (node's
 * `req.headersDistinct`) ask for, `request: undefined` when no descriptor header came, or
 * `invalid-value` for a value over the service's text length. It throws {@link DecisionError}
 * `INVALID_REQUEST` naming the header for what the proxy's configuration got wrong: no domain, a
 * header named outside the scheme, one sent twice, or one entry numbered two ways (`-3` and `-3-1`).
 */
export function readAuthRequest(headers: NodeJS.Dict<string[]>): AuthRequest {
  const domain = headers[AUTH_FIELD.domain];
  if (domain === undefined || domain.length !== 1 || domain[0] === '')
    throw misconfigured(AUTH_FIELD.domain, 'is required, once: the domain of the descriptor config');
  const entries: Entry[] = [];
  for (const [name, values] of Object.entries(headers)) {
    if (!name.startsWith(AUTH_FIELD.descriptorPrefix) || values === undefined) continue;
    const entry = entryOf(name, values);
    if (entry === undefined) return { kind: 'invalid-value', header: name };
    entries.push(entry);
  }
  if (entries.length === 0) return { kind: 'decide', request: undefined };
  entries.sort((a, b) => a.descriptor - b.descriptor || a.entry - b.entry);
  const descriptors: Array<{ entries: Array<{ key: string; value: string }> }> = [];
  let last: Entry | undefined;
  for (const e of entries) {
    if (last?.descriptor === e.descriptor && last.entry === e.entry)
      throw misconfigured(
        `${AUTH_FIELD.descriptorPrefix}${e.descriptor}-${e.entry}`,
        `entry ${e.entry} of descriptor ${e.descriptor} is sent under two names; use one`,
      );
    if (last?.descriptor !== e.descriptor) descriptors.push({ entries: [] });
    descriptors.at(-1)!.entries.push({ key: e.key, value: e.value });
    last = e;
  }
  return { kind: 'decide', request: parseDecisionRequest({ domain: domain[0], descriptors }) };
}

/**
 * authAnswer returns the answer to `/v1/auth` for `result` (undefined: nothing was limited): 204
 * with its headers when admitted; 403 with its headers, `Floodgate-Status: 429` and the
 * `quota-exceeded` problem naming the refusing limits as in `RateLimit-Policy`.
 */
export function authAnswer(result: DecisionResult | undefined): AuthAnswer {
  if (result === undefined) return { status: 204, headers: [] };
  if (result.overallCode === 'OK') return { status: 204, headers: result.headers };
  const names = policyNames(result.statuses);
  const violated: string[] = [];
  result.statuses.forEach((s, i) => {
    const name = names[i];
    if (s.code === 'OVER_LIMIT' && name !== undefined) violated.push(name);
  });
  return {
    status: 403,
    headers: [
      ...result.headers,
      [AUTH_FIELD.status, '429'],
      [AUTH_FIELD.problem, problemBody('quota-exceeded', violated)],
    ],
  };
}

/** INVALID_VALUE_ANSWER is the answer to a request keyed by a value over the service's text length. */
export const INVALID_VALUE_ANSWER: AuthAnswer = Object.freeze({
  status: 403,
  headers: Object.freeze([
    [AUTH_FIELD.status, '400'],
    [AUTH_FIELD.problem, INVALID_VALUE_PROBLEM],
  ] as const),
});
