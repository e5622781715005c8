/**
 * The response fields a decision asks Envoy to add, as configured: none; the IETF draft's
 * `RateLimit-Policy` and `RateLimit` (one list member per limited descriptor) with `Retry-After`
 * when over limit (the default); or envoyproxy/ratelimit's three fields of the descriptor closest
 * to its limit (`RateLimit-Limit`, `-Remaining`, `-Reset` by default there, `X-RateLimit-*` as its
 * users often name them).
 */
import { FIELD, policyItem, retryAfterSeconds, serviceHead, serviceItem } from 'floodgate/http';
import type { Decision } from 'floodgate';
import type { Rule } from './rule.js';
import type { DescriptorStatus } from './status.js';
import { UNIT_MS } from './units.js';

/**
 * ResponseHeaders says which fields a decision asks Envoy to add: `off`, `draft` (the IETF draft's),
 * or `limit-remaining-reset` with the three names (envoyproxy/ratelimit's `LIMIT_RESPONSE_HEADERS_ENABLED`
 * with `LIMIT_LIMIT_HEADER`, `LIMIT_REMAINING_HEADER`, `LIMIT_RESET_HEADER`).
 */
export type ResponseHeaders =
  | { readonly mode: 'off' }
  | { readonly mode: 'draft' }
  | {
      readonly mode: 'limit-remaining-reset';
      readonly limit: string;
      readonly remaining: string;
      readonly reset: string;
    };

/** DRAFT_HEADERS asks for the IETF draft's fields (the default). */
export const DRAFT_HEADERS: ResponseHeaders = { mode: 'draft' };

/** ENVOY_HEADERS are envoyproxy/ratelimit's default names for its three fields. */
export const ENVOY_HEADERS: ResponseHeaders = {
  mode: 'limit-remaining-reset',
  limit: 'RateLimit-Limit',
  remaining: 'RateLimit-Remaining',
  reset: 'RateLimit-Reset',
};

/** X_RATELIMIT_HEADERS are the same three fields under the `X-RateLimit-*` names. */
export const X_RATELIMIT_HEADERS: ResponseHeaders = {
  mode: 'limit-remaining-reset',
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
};

const NAMED: Readonly<Record<string, ResponseHeaders>> = {
  draft: DRAFT_HEADERS,
  off: { mode: 'off' },
  ratelimit: ENVOY_HEADERS,
  'x-ratelimit': X_RATELIMIT_HEADERS,
};

/** RESPONSE_HEADER_MODES are the names {@link namedResponseHeaders} takes. */
export const RESPONSE_HEADER_MODES = Object.keys(NAMED) as ReadonlyArray<'draft' | 'off' | 'ratelimit' | 'x-ratelimit'>;

/**
 * namedResponseHeaders returns the headers a mode's name asks for (`draft`, `off`, `ratelimit`,
 * `x-ratelimit`, any case), or three field names written `Limit,Remaining,Reset`; undefined for
 * anything else.
 */
export function namedResponseHeaders(given: string): ResponseHeaders | undefined {
  const named = NAMED[given.toLowerCase()];
  if (named !== undefined) return named;
  const names = given.split(',').map((n) => n.trim());
  if (names.length !== 3 || !names.every((n) => FIELD_NAME.test(n))) return undefined;
  return { mode: 'limit-remaining-reset', limit: names[0]!, remaining: names[1]!, reset: names[2]! };
}

const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** responseHeaders returns the `[name, value]` pairs `config` asks for `statuses`. */
export function responseHeaders(
  statuses: readonly DescriptorStatus[],
  overallCode: 'OK' | 'OVER_LIMIT',
  config: ResponseHeaders,
): Array<[string, string]> {
  if (config.mode === 'off') return [];
  if (config.mode === 'draft') return rateLimitHeaders(statuses, overallCode);
  return limitRemainingReset(statuses, config);
}

/**
 * limitRemainingReset returns envoyproxy/ratelimit's three fields for the descriptor with a
 * limit that has the fewest hits left (the first of equals): its requests per unit, what
 * remains, and the seconds until its window resets. Nothing when no descriptor has a limit.
 */
function limitRemainingReset(
  statuses: readonly DescriptorStatus[],
  names: { readonly limit: string; readonly remaining: string; readonly reset: string },
): Array<[string, string]> {
  let closest: DescriptorStatus | undefined;
  for (const s of statuses) {
    if (s.rule?.unit === undefined) continue;
    if (closest === undefined || s.limitRemaining < closest.limitRemaining) closest = s;
  }
  if (closest === undefined) return [];
  const resetSeconds = Number.isFinite(closest.durationUntilResetMs)
    ? Math.ceil(closest.durationUntilResetMs / 1000)
    : 0;
  return [
    [names.limit, String(closest.rule!.requestsPerUnit)],
    [names.remaining, String(closest.limitRemaining)],
    [names.reset, String(resetSeconds)],
  ];
}

const POLICY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The `RateLimit-Policy` member of each rule under each name it was sent with: they never change. */
const POLICY_ITEMS = new WeakMap<Rule, Map<string, string>>();

function policyItemOf(rule: Rule, name: string): string {
  let byName = POLICY_ITEMS.get(rule);
  if (byName === undefined) POLICY_ITEMS.set(rule, (byName = new Map()));
  let item = byName.get(name);
  if (item === undefined) {
    item =
      rule.policy === undefined
        ? `"${name}";q=0;w=${Math.max(1, Math.ceil(UNIT_MS[rule.unit!] / 1000))}`
        : policyItem({ name, policy: rule.policy, unit: 'requests', pk: undefined });
    byName.set(name, item);
  }
  return item;
}

/**
 * policyNames returns the name each descriptor's limit has in `RateLimit-Policy`, in request order:
 * its `rate_limit.name` when that is a valid draft name not taken by an earlier one, else
 * `d<index>`; undefined for a descriptor no limit applies to.
 */
export function policyNames(statuses: readonly DescriptorStatus[]): Array<string | undefined> {
  const used = new Set<string>();
  return statuses.map((s, i) => {
    if (s.rule === undefined) return undefined;
    let name = s.rule.name !== undefined && POLICY_NAME.test(s.rule.name) ? s.rule.name : `d${i}`;
    if (used.has(name)) name = `d${i}`;
    used.add(name);
    return name;
  });
}

/**
 * rateLimitHeaders returns `[name, value]` pairs for `statuses`: each descriptor with a limit is
 * a policy named by its `rate_limit.name` when that is a valid draft name, else `d<index>`.
 * Nothing is returned when no descriptor has a limit.
 */
export function rateLimitHeaders(
  statuses: readonly DescriptorStatus[],
  overallCode: 'OK' | 'OVER_LIMIT',
): Array<[string, string]> {
  const policies: string[] = [];
  const services: string[] = [];
  const refused: Decision[] = [];
  const names = policyNames(statuses);
  statuses.forEach((s, i) => {
    const name = names[i];
    if (s.rule === undefined || name === undefined) return;
    policies.push(policyItemOf(s.rule, name));
    if (s.decision !== undefined && s.rule.policy !== undefined) {
      services.push(serviceItem(serviceHead(name), s.decision, undefined));
      if (s.code === 'OVER_LIMIT') refused.push(s.decision);
    } else {
      // A limit of 0: nothing is ever admitted; `t` is the rest of the unit's window.
      services.push(`"${name}";r=0;t=${Math.ceil(s.durationUntilResetMs / 1000)}`);
    }
  });
  if (policies.length === 0) return [];
  const headers: Array<[string, string]> = [
    [FIELD.policy, policies.join(', ')],
    [FIELD.service, services.join(', ')],
  ];
  if (overallCode === 'OVER_LIMIT') {
    const seconds = retryAfterSeconds(refused);
    if (seconds !== undefined) headers.push([FIELD.retryAfter, String(seconds)]);
  }
  return headers;
}
