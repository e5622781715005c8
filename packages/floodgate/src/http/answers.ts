/**
 * The parts of an answer that every caller answering with decisions writes the same way: the
 * library's HTTP gate and floodgate's gateway. Each rule is here once: which decision gets a
 * `RateLimit` item, which marks the answer degraded, what a refusal and a failed store answer.
 */
import type { Decision } from '../core/decision.js';
import { isDegraded } from './failure-report.js';
import { FIELD, retryAfterSeconds, serviceItem } from './headers.js';
import { PROBLEM_CONTENT_TYPE, problemBody, type ProblemKind } from './problem.js';

/** HeaderPair is one response header as [name, value]. */
export type HeaderPair = readonly [name: string, value: string];

/** DegradedReason is what made a degraded decision: a store's failure policy, not the limit. */
export type DegradedReason = 'fail-open' | 'fail-closed' | 'fallback';

/** undecided tells whether a store's failure policy answered without deciding: no remaining quota can be claimed. */
export function undecided(d: Decision): boolean {
  return d.reason === 'fail-open' || d.reason === 'fail-closed';
}

/**
 * serviceList returns the `RateLimit` list `list` ('' when empty) with the item of `decision`
 * under `head` (and `pk`) appended; a decision a store's failure policy made without deciding adds
 * no item, since the draft's `r` is required and any value would be invented (`r=0` tells a client
 * to stop).
 */
export function serviceList(list: string, head: string, decision: Decision, pk: string | undefined): string {
  if (undecided(decision)) return list;
  const item = serviceItem(head, decision, pk);
  return list === '' ? item : list + ', ' + item;
}

/** degradedReason returns the reason of the first decision a store's failure policy made, if any. */
export function degradedReason(decisions: readonly Decision[]): DegradedReason | undefined {
  for (const d of decisions) if (isDegraded(d)) return d.reason as DegradedReason;
  return undefined;
}

/**
 * refusalKind returns the problem of a refusal by `violated` (the decisions that refused): quota
 * exceeded when a limit (or a store's local fallback limit) refused; otherwise the capacity was
 * reduced (a full store, a store failing closed).
 */
export function refusalKind(violated: readonly Decision[]): ProblemKind {
  return violated.some((d) => d.reason === 'limit' || d.reason === 'fallback')
    ? 'quota-exceeded'
    : 'temporary-reduced-capacity';
}

/**
 * endRefusal appends to a refusal's `headers` what every refusal carries after its `RateLimit`
 * fields: `Retry-After` when a wait cures it (the longest of `violated`), `Cache-Control: no-store`
 * and the body's content type; returns `headers`.
 */
export function endRefusal(
  headers: HeaderPair[],
  violated: readonly Decision[],
  contentType: string = PROBLEM_CONTENT_TYPE,
): HeaderPair[] {
  const retryAfter = retryAfterSeconds(violated);
  if (retryAfter !== undefined) headers.push([FIELD.retryAfter, String(retryAfter)]);
  headers.push([FIELD.cacheControl, 'no-store'], [FIELD.contentType, contentType]);
  return headers;
}

/** StoreDownAnswer is the answer when a store error reached the caller: nothing was charged or decided. */
export interface StoreDownAnswer {
  readonly allowed: boolean;
  /** 503, or 0 when admitted. */
  readonly status: number;
  readonly headers: readonly HeaderPair[];
  readonly body: string | undefined;
}

/**
 * storeDownAnswer returns the answer when a store error reached the caller on the limits
 * `failed`: admitted and marked under `fail-open`; under `fail-closed`, 503
 * `temporary-reduced-capacity` with `Retry-After: 1` (when the store answers again is unknown: a
 * second, as the limiter layer's own fail-closed says). No `RateLimit` is claimed. The mark is the
 * header `degradedHeader` (none when undefined).
 */
export function storeDownAnswer(
  failed: readonly string[],
  policy: 'fail-open' | 'fail-closed',
  degradedHeader: string | undefined,
): StoreDownAnswer {
  const headers: HeaderPair[] = degradedHeader === undefined ? [] : [[degradedHeader, policy]];
  if (policy === 'fail-open') return { allowed: true, status: 0, headers, body: undefined };
  headers.push([FIELD.retryAfter, '1'], [FIELD.cacheControl, 'no-store'], [FIELD.contentType, PROBLEM_CONTENT_TYPE]);
  const body = problemBody('temporary-reduced-capacity', failed, 'the rate-limit store is unavailable');
  return { allowed: false, status: 503, headers, body };
}
