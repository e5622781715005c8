/**
 * Reading a `RateLimitQuotaUsageReports` message as the proto loader decodes it (field names as in
 * the proto, 64-bit numbers as strings), refusing what no data plane should send with a
 * {@link QuotaStreamError} that names the field.
 */
import type { BucketId } from './buckets.js';

/** QuotaStreamErrorCode is why a stream is ended: a bad report, or a client over a cap. */
export type QuotaStreamErrorCode = 'INVALID_REPORT' | 'TOO_MANY_BUCKETS';

/** QuotaStreamError ends a stream: `INVALID_REPORT` as gRPC INVALID_ARGUMENT, `TOO_MANY_BUCKETS` as RESOURCE_EXHAUSTED. */
export class QuotaStreamError extends Error {
  /** Creates the error; `message` names the field and how to fix it. */
  constructor(
    readonly code: QuotaStreamErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'QuotaStreamError';
  }
}

/** BucketUsage is one bucket's usage in a report. */
export interface BucketUsage {
  readonly bucket: BucketId;
  readonly allowed: number;
  readonly denied: number;
  readonly elapsedMs: number;
}

/** UsageReport is a checked report: its domain (empty when the client left it to the stream's first report) and its usages. */
export interface UsageReport {
  readonly domain: string;
  readonly usages: readonly BucketUsage[];
}

function bad(message: string): QuotaStreamError {
  return new QuotaStreamError('INVALID_REPORT', message);
}

function count(value: unknown, path: string): number {
  const n = typeof value === 'string' ? Number(value) : typeof value === 'number' ? value : NaN;
  if (!Number.isSafeInteger(n) || n < 0)
    throw bad(
      `${path} must be a whole number from 0 to 2^53-1, got ${JSON.stringify(value)} (a negative count sent as uint64 reads as above 2^63)`,
    );
  return n;
}

function elapsedMsOf(value: unknown, path: string): number {
  if (value === null || value === undefined) return 0;
  const d = value as { seconds?: unknown; nanos?: unknown };
  const seconds = Number(d.seconds ?? 0);
  const nanos = Number(d.nanos ?? 0);
  if (!Number.isSafeInteger(seconds) || seconds < 0 || !Number.isInteger(nanos) || nanos < 0 || nanos > 999_999_999)
    throw bad(`${path} must be a non-negative duration, got ${JSON.stringify(value)}`);
  return seconds * 1000 + nanos / 1e6;
}

function bucketOf(value: unknown, path: string): BucketId {
  const bucket = (value as { bucket?: unknown } | null)?.bucket;
  if (bucket === null || typeof bucket !== 'object')
    throw bad(`${path}.bucket is required: a BucketId with at least one key`);
  const entries = Object.entries(bucket as Record<string, unknown>);
  if (entries.length === 0) throw bad(`${path}.bucket must have at least one key (Envoy's BucketId needs min_pairs 1)`);
  for (const [k, v] of entries)
    if (k === '' || typeof v !== 'string' || v === '')
      throw bad(
        `${path}.bucket keys and values must be non-empty strings, got ${JSON.stringify(k)}: ${JSON.stringify(v)}`,
      );
  return bucket as BucketId;
}

/**
 * parseUsageReport returns the checked report, or throws a {@link QuotaStreamError}
 * (`INVALID_REPORT`) naming the first bad field: a bucket without keys, a count that is not a whole
 * number from 0 to 2^53-1, a negative `time_elapsed`.
 */
export function parseUsageReport(message: unknown): UsageReport {
  if (message === null || typeof message !== 'object')
    throw bad('the report must be a RateLimitQuotaUsageReports message');
  const m = message as { domain?: unknown; bucket_quota_usages?: unknown };
  const domain = m.domain ?? '';
  if (typeof domain !== 'string') throw bad(`domain must be a string, got ${JSON.stringify(domain)}`);
  const list = m.bucket_quota_usages ?? [];
  if (!Array.isArray(list)) throw bad('bucket_quota_usages must be a list');
  const usages = list.map((u: unknown, i): BucketUsage => {
    const path = `bucket_quota_usages[${i}]`;
    const usage = (u ?? {}) as Record<string, unknown>;
    return {
      bucket: bucketOf(usage.bucket_id, `${path}.bucket_id`),
      allowed: count(usage.num_requests_allowed ?? 0, `${path}.num_requests_allowed`),
      denied: count(usage.num_requests_denied ?? 0, `${path}.num_requests_denied`),
      elapsedMs: elapsedMsOf(usage.time_elapsed, `${path}.time_elapsed`),
    };
  });
  return { domain, usages };
}
