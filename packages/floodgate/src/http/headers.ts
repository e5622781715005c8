/**
 * Response header values, each derived from decisions and policy parameters: the IETF draft's
 * `RateLimit-Policy` and `RateLimit` structured-field lists (draft-ietf-httpapi-ratelimit-headers-10),
 * `Retry-After`, and the legacy `X-RateLimit-*` trio.
 */
import type { Algorithm } from '../core/algorithm.js';
import type { Decision } from '../core/decision.js';

/** QuotaUnit is the draft's `qu`: what the quota counts. */
export type QuotaUnit = 'requests' | 'content-bytes' | 'concurrent-requests';

/** LegacyReset is how `X-RateLimit-Reset` is written: seconds from now, or a Unix time in seconds. */
export type LegacyReset = 'delta-seconds' | 'epoch-seconds';

/**
 * The names of the response fields floodgate writes, in lower case. Field names are
 * case-insensitive (RFC 9110, section 5.1); lower case is how HTTP/2 and HTTP/3 send every name,
 * and node stores and matches a name already in lower case without folding it again on each
 * response, which the two headers of every admitted request would otherwise pay for.
 */
export const FIELD = Object.freeze({
  policy: 'ratelimit-policy',
  service: 'ratelimit',
  retryAfter: 'retry-after',
  cacheControl: 'cache-control',
  contentType: 'content-type',
  legacyLimit: 'x-ratelimit-limit',
  legacyRemaining: 'x-ratelimit-remaining',
  legacyReset: 'x-ratelimit-reset',
});

/**
 * isListField tells whether a header is one of the draft's lists (`RateLimit-Policy`,
 * `RateLimit`), whose items from stacked middlewares (a per-IP limit on the app, a per-user one on
 * a route) are all sent, rather than the last one replacing the others.
 */
export function isListField(name: string): boolean {
  return name === FIELD.policy || name === FIELD.service;
}

/**
 * stackedValue returns the value to set for a list field that an earlier middleware may have set
 * already (`existing`, as node's `getHeader` returns it): the earlier items, then `value`.
 */
export function stackedValue(value: string, existing: unknown): string {
  if (existing === undefined || existing === null || existing === '') return value;
  return `${Array.isArray(existing) ? existing.join(', ') : String(existing)}, ${value}`;
}

/** Checked the same way by every caller: what a policy name may contain. */
export const POLICY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * windowMsOf returns the time in ms a policy takes to restore its whole limit (the draft's `w`), as
 * the policy itself states it ({@link Algorithm.windowMs}); undefined for a policy that has none.
 */
export function windowMsOf(policy: Algorithm): number | undefined {
  return policy.windowMs;
}

/** ceilSeconds rounds a duration in ms up to whole seconds (0 for none). */
export function ceilSeconds(ms: number): number {
  return ms > 0 ? Math.ceil(ms / 1000) : 0;
}

/** PolicyItemParts is what a `RateLimit-Policy` item says. */
export interface PolicyItemParts {
  name: string;
  policy: Algorithm;
  unit: QuotaUnit;
  /** The partition key in base64, when partition keys are on. */
  pk: string | undefined;
}

/**
 * policyItem returns one `RateLimit-Policy` list member: `"name";q=<limit>;w=<seconds>`, with
 * `qu` when the unit is not requests and `pk` when given. `q` is the policy's limit rounded down;
 * `w` is omitted when the policy's parameters give no window.
 */
export function policyItem(parts: PolicyItemParts): string {
  let item = `"${parts.name}";q=${Math.floor(parts.policy.limit)}`;
  if (parts.unit !== 'requests') item += `;qu="${parts.unit}"`;
  const windowMs = windowMsOf(parts.policy);
  if (windowMs !== undefined) item += `;w=${Math.max(1, ceilSeconds(windowMs))}`;
  if (parts.pk !== undefined) item += `;pk=:${parts.pk}:`;
  return item;
}

/**
 * resetMsOf returns the time behind the draft's `t` for one decision: for a refused request, how
 * long until it could be admitted (`retryAfterMs`); otherwise until the quota is whole again
 * (`resetMs`). Infinity means never.
 */
export function resetMsOf(decision: Decision): number {
  return decision.allowed ? decision.resetMs : decision.retryAfterMs;
}

/** serviceHead returns the start of a policy's `RateLimit` list member, `"name";r=`, written once per policy. */
export function serviceHead(name: string): string {
  return `"${name}";r=`;
}

/**
 * serviceItem returns one `RateLimit` list member, `"name";r=<remaining>;t=<seconds>`, from its
 * {@link serviceHead}; with `pk` (base64) when given; `t` is omitted when the wait is unbounded.
 */
export function serviceItem(head: string, decision: Decision, pk: string | undefined): string {
  let item = head + integerText(decision.remaining);
  const seconds = tSecondsOf(decision);
  if (seconds >= 0) item += ';t=' + integerText(seconds);
  if (pk !== undefined) item += `;pk=:${pk}:`;
  return item;
}

/** tSecondsOf returns a decision's `t`, its {@link resetMsOf} in whole seconds rounded up; -1 when the wait is unbounded. */
export function tSecondsOf(decision: Decision): number {
  const resetMs = resetMsOf(decision);
  return Number.isFinite(resetMs) ? ceilSeconds(resetMs) : -1;
}

/**
 * integerText is `String(n)` for a whole number, faster for large ones: V8 converts numbers past
 * 2^31 slowly (about 0.2 µs), so those are written as two halves that it converts quickly.
 */
export function integerText(n: number): string {
  if (n < 1e9 || !Number.isSafeInteger(n)) return String(n);
  const high = Math.floor(n / 1e9);
  const low = String(n - high * 1e9);
  return String(high) + '000000000'.slice(low.length) + low;
}

/**
 * retryAfterSeconds returns the `Retry-After` value for refused decisions: the longest of their
 * waits in whole seconds, rounded up, so never earlier than any of their `t`; undefined when every
 * wait is unbounded (the request can never be admitted).
 */
export function retryAfterSeconds(refused: readonly Decision[]): number | undefined {
  let seconds: number | undefined;
  for (const d of refused) {
    if (Number.isFinite(d.retryAfterMs)) seconds = Math.max(seconds ?? 0, ceilSeconds(d.retryAfterMs));
  }
  return seconds;
}

/**
 * legacyHeaders returns `X-RateLimit-Limit`, `-Remaining` and `-Reset` for the decision closest to
 * its limit (a refused one first, then the least remaining). Reset is delta seconds (as in IETF
 * draft-03 and Envoy) or, with `epoch-seconds`, a Unix time in seconds (as at GitHub).
 */
export function legacyHeaders(decisions: readonly Decision[], reset: LegacyReset, nowMs: number): [string, string][] {
  let pick = decisions[0]!;
  for (const d of decisions) {
    if (pick.allowed && (!d.allowed || d.remaining < pick.remaining)) pick = d;
  }
  const resetMs = resetMsOf(pick);
  const headers: [string, string][] = [
    [FIELD.legacyLimit, integerText(Math.floor(pick.limit))],
    [FIELD.legacyRemaining, integerText(pick.remaining)],
  ];
  if (Number.isFinite(resetMs)) {
    const value = reset === 'delta-seconds' ? ceilSeconds(resetMs) : Math.ceil((nowMs + resetMs) / 1000);
    headers.push([FIELD.legacyReset, String(value)]);
  }
  return headers;
}
