/**
 * What a domain's `quota:` section says: the rules that match Envoy's quota buckets, the budget of
 * each, the strategy assigned, and what an unknown bucket gets. Read by `config.ts`; used by the
 * ledger, the assignment builder and the stream handler.
 */

/** QuotaStrategy is the rate limit strategy a rule assigns: Envoy's `token_bucket` or `requests_per_time_unit`. */
export type QuotaStrategy = 'token_bucket' | 'requests_per_time_unit';

/** UnknownBucket is what a bucket no rule matches gets: a DENY_ALL or ALLOW_ALL assignment, or an abandon action. */
export type UnknownBucket = 'deny' | 'allow' | 'abandon';

/** QuotaUnit is a unit Envoy's `RequestsPerTimeUnit.time_unit` can carry. */
export type QuotaUnit = 'second' | 'minute' | 'hour' | 'day';

/** QUOTA_UNIT_SECONDS gives each {@link QuotaUnit}'s length in seconds. */
export const QUOTA_UNIT_SECONDS: Readonly<Record<QuotaUnit, number>> = Object.freeze({
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
});

/** BucketMatch is one `bucket:` entry: a key of the bucket id and the value it must have (`*` matches any run of characters). */
export interface BucketMatch {
  readonly key: string;
  readonly value: string;
}

/**
 * QuotaRule is one `buckets:` entry. Its budget is `limit` requests per `periodSeconds`, shared
 * by every client reporting a bucket it matches (each distinct bucket id has its own budget).
 */
export interface QuotaRule {
  /** Every entry must match the bucket id (which may have more keys). */
  readonly match: readonly BucketMatch[];
  /** Requests per period, shared by all clients of one bucket (a whole number; 0 denies all). */
  readonly limit: number;
  /** The period the limit is counted over, in whole seconds (a unit, or a token bucket's fill interval). */
  readonly periodSeconds: number;
  /** The unit of `requests_per_unit`, when the limit was given that way (a `requests_per_time_unit` strategy needs it). */
  readonly unit: QuotaUnit | undefined;
  /** The burst the clients share: a token bucket's `max_tokens` (the limit itself for `requests_per_unit`). */
  readonly maxTokens: number;
  readonly strategy: QuotaStrategy;
  /** How long an assignment holds, in seconds; the server counts a client's share as taken for as long. */
  readonly assignmentTtlSeconds: number;
  /** A bucket reported with no requests for this long is abandoned; undefined: never. */
  readonly abandonAfterSeconds: number | undefined;
  /** Where the rule starts, as `file:line:column`. */
  readonly at: string;
}

/** QuotaSpec is a domain's `quota:` section. */
export interface QuotaSpec {
  readonly buckets: readonly QuotaRule[];
  readonly unknownBucket: UnknownBucket;
  /** The TTL of the blanket assignment an unknown bucket gets (`deny`, `allow`), in seconds. */
  readonly unknownBucketTtlSeconds: number;
  /** The most buckets one stream may report; a stream over it is ended with RESOURCE_EXHAUSTED. */
  readonly maxBucketsPerStream: number;
}

/** DEFAULT_ASSIGNMENT_TTL_SECONDS is a rule's `assignment_ttl_seconds` when it gives none. */
export const DEFAULT_ASSIGNMENT_TTL_SECONDS = 30;
/** DEFAULT_MAX_BUCKETS_PER_STREAM is `max_buckets_per_stream` when a section gives none. */
export const DEFAULT_MAX_BUCKETS_PER_STREAM = 1000;
