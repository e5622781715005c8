/**
 * What the service reports of each limited descriptor it decides, for metrics: the outcome (a
 * limit in shadow or quota mode that is over its limit is counted apart from a refusal), and the
 * descriptor named by its configured path, never by the request's value unless the config asks.
 */
import type { Decision } from 'floodgate';
import type { Rule } from './rule.js';

/**
 * ServiceOutcome is one descriptor's outcome: `admitted`, `limited` (refused), `shadow_limited` /
 * `quota_limited` (over its limit, answered OK by shadow or quota mode), `fallback` (the store's
 * local fallback decided while the store was away), `fail_open` / `fail_closed` (the store's fixed
 * answer), `store_full` (the memory store was full).
 */
export type ServiceOutcome = (typeof SERVICE_OUTCOMES)[number];

/** SERVICE_OUTCOMES are every {@link ServiceOutcome}, for those that count them (metrics, the dashboard). */
export const SERVICE_OUTCOMES = [
  'admitted',
  'limited',
  'shadow_limited',
  'quota_limited',
  'fallback',
  'fail_open',
  'fail_closed',
  'store_full',
] as const;

/** DescriptorOutcome is what the service reports of one limited descriptor of a request. */
export interface DescriptorOutcome {
  readonly domain: string;
  /** The matched path after the domain, as configured (`key_value.key`, a wildcard as `key_foo*`); `override` for a request's own limit. */
  readonly descriptor: string;
  readonly outcome: ServiceOutcome;
  /** True when the descriptor only asked (hits 0, or `mode: 'peek'`): nothing was charged. */
  readonly peek: boolean;
  /** True when an admitted hit left less than a fifth of the limit (Envoy's `near_limit`, at its default ratio 0.8). */
  readonly nearLimit: boolean;
}

/** NEAR_LIMIT_RATIO is Envoy's default `NEAR_LIMIT_RATIO`: hits above this share of the limit are near it. */
export const NEAR_LIMIT_RATIO = 0.8;

const BY_REASON: Readonly<Record<Decision['reason'], ServiceOutcome>> = {
  ok: 'admitted',
  limit: 'limited',
  fallback: 'fallback',
  'fail-open': 'fail_open',
  'fail-closed': 'fail_closed',
  'store-full': 'store_full',
};

/**
 * outcomeOf returns the outcome of `rule` deciding `decision` (undefined for a limit of 0, which
 * refuses without a decision); `shadowAll` is the service's global shadow mode.
 */
export function outcomeOf(rule: Rule, decision: Decision | undefined, shadowAll: boolean): ServiceOutcome {
  const outcome = decision === undefined ? 'limited' : BY_REASON[decision.reason];
  if (outcome !== 'limited') return outcome;
  if (rule.quotaMode) return 'quota_limited';
  return rule.shadowMode || shadowAll ? 'shadow_limited' : 'limited';
}

/** nearLimitOf returns whether an admitted `decision` used more than {@link NEAR_LIMIT_RATIO} of its limit. */
export function nearLimitOf(decision: Decision | undefined): boolean {
  if (decision === undefined || !decision.allowed || decision.limit <= 0) return false;
  return decision.limit - decision.remaining > Math.floor(decision.limit * NEAR_LIMIT_RATIO);
}
