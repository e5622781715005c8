/**
 * Reading a `RateLimitQuotaUsageReports` message from its bytes, refusing what no data plane
 * should send with a {@link QuotaStreamError} that names the field (and bytes that are not the
 * message with one that says where they stop being it).
 */
import type { BucketId } from './buckets.js';
import { TOO_BIG, WIRE, WireReader } from './wire.js';

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
  /** The bucket's `BucketId` as the client encoded it (read by {@link readBucketId}); answers carry it back unchanged. */
  readonly bucketIdBytes: Uint8Array;
  /** Where the usage is in the report (`bucket_quota_usages[index]`), for errors about its bucket id. */
  readonly index: number;
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

function notAReport(what: string): QuotaStreamError {
  return bad(`the bytes are not a RateLimitQuotaUsageReports message: ${what}`);
}

/** usagePath returns where usage `index` of a report is, for error messages. */
export function usagePath(index: number): string {
  return `bucket_quota_usages[${index}]`;
}

function count(r: WireReader, index: number, name: string): number {
  if (!r.is(WIRE.VARINT)) throw r.wrongWire(WIRE.VARINT, `${usagePath(index)}.${name}`);
  const n = r.varint();
  if (n === TOO_BIG)
    throw bad(
      `${usagePath(index)}.${name} must be a whole number from 0 to 2^53-1, got 2^53 or more (a negative count sent as uint64 reads as above 2^63)`,
    );
  return n;
}

/** elapsedMsOf reads a `google.protobuf.Duration`; int64 seconds and int32 nanos below 0 arrive as 10-byte varints, read as {@link TOO_BIG}. */
function elapsedMsOf(r: WireReader, index: number): number {
  if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, `${usagePath(index)}.time_elapsed`);
  const outer = r.enter();
  let seconds = 0;
  let nanos = 0;
  while (r.more) {
    const field = r.field();
    if (field !== 1 && field !== 2) r.skip();
    else if (!r.is(WIRE.VARINT)) throw r.wrongWire(WIRE.VARINT, `${usagePath(index)}.time_elapsed`);
    else if (field === 1) seconds = r.varint();
    else nanos = r.varint();
  }
  r.leave(outer);
  if (seconds === TOO_BIG || nanos === TOO_BIG || nanos > 999_999_999)
    throw bad(
      `${usagePath(index)}.time_elapsed must be a non-negative duration, got seconds ${seconds === TOO_BIG ? '< 0' : seconds}, nanos ${nanos === TOO_BIG ? '< 0' : nanos}`,
    );
  return seconds * 1000 + nanos / 1e6;
}

/** entryOf reads one `map<string, string>` entry (key 1, value 2) into `bucket`, and returns whether its key is new. */
function entryOf(r: WireReader, path: string, bucket: Record<string, string>): boolean {
  const outer = r.enter();
  let key = '';
  let value = '';
  while (r.more) {
    const field = r.field();
    if (field !== 1 && field !== 2) r.skip();
    else if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, `${path} ${field === 1 ? 'key' : 'value'}`);
    else if (field === 1) key = r.text();
    else value = r.text();
  }
  r.leave(outer);
  if (key === '' || value === '')
    throw bad(
      `${path} keys and values must be non-empty strings, got ${JSON.stringify(key)}: ${JSON.stringify(value)}`,
    );
  const fresh = !Object.hasOwn(bucket, key);
  bucket[key] = value;
  return fresh;
}

/**
 * readBucketId returns the `BucketId` of `usage` (read from its `bucketIdBytes`), or throws a
 * {@link QuotaStreamError} (`INVALID_REPORT`) for an id without keys or with an empty key or value.
 */
export function readBucketId(usage: BucketUsage): BucketId {
  const bytes = usage.bucketIdBytes;
  const r = new WireReader(bytes, 0, bytes.length, notAReport);
  const path = `${usagePath(usage.index)}.bucket_id.bucket`;
  const bucket: Record<string, string> = Object.create(null) as Record<string, string>;
  let keys = 0;
  while (r.more) {
    if (r.field() !== 1) r.skip();
    else if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, path);
    else if (entryOf(r, path, bucket)) keys++;
  }
  if (keys === 0) throw bad(`${path} must have at least one key (Envoy's BucketId needs min_pairs 1)`);
  return bucket;
}

function usageOf(r: WireReader, index: number): BucketUsage {
  if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, 'bucket_quota_usages');
  const outer = r.enter();
  let bucketIdBytes: Uint8Array | undefined;
  let allowed = 0;
  let denied = 0;
  let elapsedMs = 0;
  while (r.more) {
    const field = r.field();
    if (field === 1) {
      if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, `${usagePath(index)}.bucket_id`);
      bucketIdBytes = r.slice();
    } else if (field === 2) elapsedMs = elapsedMsOf(r, index);
    else if (field === 3) allowed = count(r, index, 'num_requests_allowed');
    else if (field === 4) denied = count(r, index, 'num_requests_denied');
    else r.skip();
  }
  r.leave(outer);
  if (bucketIdBytes === undefined)
    throw bad(`${usagePath(index)}.bucket_id.bucket is required: a BucketId with at least one key`);
  return { bucketIdBytes, index, allowed, denied, elapsedMs };
}

/**
 * parseUsageReport returns the report encoded in `bytes`, checked, or throws a
 * {@link QuotaStreamError} (`INVALID_REPORT`) naming the first bad field: a usage without a bucket id, a
 * count that is not a whole number from 0 to 2^53-1, a negative `time_elapsed`, or bytes that are
 * not the message (a truncated field, a field of the wrong wire type). Bucket ids are read apart
 * ({@link readBucketId}), once per stream and id.
 */
export function parseUsageReport(bytes: Uint8Array): UsageReport {
  const r = new WireReader(bytes, 0, bytes.length, notAReport);
  let domain = '';
  const usages: BucketUsage[] = [];
  while (r.more) {
    const field = r.field();
    if (field === 2) usages.push(usageOf(r, usages.length));
    else if (field !== 1) r.skip();
    else if (!r.is(WIRE.LENGTH)) throw r.wrongWire(WIRE.LENGTH, 'domain');
    else domain = r.text();
  }
  return { domain, usages };
}
