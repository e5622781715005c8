/**
 * The `BucketAction`s the server answers (proto field names): a quota assignment built from a
 * rule and a client's grant, a blanket rule, or an abandon action; `wire.ts` writes them.
 */
import type { QuotaRule } from './spec.js';

/** Duration is a google.protobuf.Duration as the proto loader writes it. */
export interface Duration {
  readonly seconds: number;
  readonly nanos?: number;
}

/** RateLimitStrategy is one of Envoy's strategies: a blanket rule, requests per time unit, or a token bucket. */
export type RateLimitStrategy =
  | { readonly blanket_rule: 'ALLOW_ALL' | 'DENY_ALL' }
  | { readonly requests_per_time_unit: { readonly requests_per_time_unit: number; readonly time_unit: string } }
  | {
      readonly token_bucket: {
        readonly max_tokens: number;
        readonly tokens_per_fill: { readonly value: number };
        readonly fill_interval: Duration;
      };
    };

/** BucketAction is one entry of `RateLimitQuotaResponse.bucket_action` without its `bucket_id` (the writer adds the client's own). */
export type BucketAction =
  | {
      readonly quota_assignment_action: {
        readonly assignment_time_to_live: Duration;
        readonly rate_limit_strategy: RateLimitStrategy;
      };
    }
  | { readonly abandon_action: Record<string, never> };

/**
 * strategyOf returns the strategy that hands a client `granted` requests per period of `rule`:
 * - `requests_per_time_unit`: `granted` per the rule's unit (0 denies all, as Envoy reads it);
 * - `token_bucket`: `granted` tokens per fill interval (the rule's period, whole seconds as Envoy
 *   reads it) and the same part of the rule's burst, at least one token; a grant of 0 is DENY_ALL,
 *   as a token bucket cannot fill with nothing.
 */
export function strategyOf(rule: QuotaRule, granted: number): RateLimitStrategy {
  if (rule.strategy === 'requests_per_time_unit')
    return {
      requests_per_time_unit: { requests_per_time_unit: granted, time_unit: (rule.unit ?? 'second').toUpperCase() },
    };
  if (granted <= 0) return { blanket_rule: 'DENY_ALL' };
  return {
    token_bucket: {
      max_tokens: burstOf(rule, granted),
      tokens_per_fill: { value: granted },
      fill_interval: { seconds: rule.periodSeconds },
    },
  };
}

/**
 * burstOf returns how many requests an assignment of `granted` under `rule` lets a client allow at
 * once, beyond its rate: a token bucket's `max_tokens` (the grant's part of the rule's burst, at
 * least 1; 0 for a grant of 0, which is DENY_ALL), or one time unit's grant for
 * `requests_per_time_unit` (a window's worth can fall on either side of a report).
 */
export function burstOf(rule: QuotaRule, granted: number): number {
  if (granted <= 0) return 0;
  if (rule.strategy === 'requests_per_time_unit') return granted;
  return rule.limit === 0 ? 1 : Math.max(1, Math.floor((rule.maxTokens * granted) / rule.limit));
}

/** assignmentOf returns the quota assignment of `granted` requests per period of `rule`, held for the rule's TTL. */
export function assignmentOf(rule: QuotaRule, granted: number): BucketAction {
  return {
    quota_assignment_action: {
      assignment_time_to_live: { seconds: rule.assignmentTtlSeconds },
      rate_limit_strategy: strategyOf(rule, granted),
    },
  };
}

/** blanketOf returns an ALLOW_ALL or DENY_ALL assignment, held for `ttlSeconds`. */
export function blanketOf(rule: 'ALLOW_ALL' | 'DENY_ALL', ttlSeconds: number): BucketAction {
  return {
    quota_assignment_action: {
      assignment_time_to_live: { seconds: ttlSeconds },
      rate_limit_strategy: { blanket_rule: rule },
    },
  };
}

/** ABANDON is the abandon action: the client forgets the bucket and stops reporting it. */
export const ABANDON: BucketAction = Object.freeze({ abandon_action: Object.freeze({}) });
