/**
 * Reading a domain's `quota:` section from an Envoy descriptor file, strictly and with every
 * problem at its file, line and column, as the rest of the file is read.
 *
 * ```yaml
 * domain: edge
 * quota:
 *   unknown_bucket: deny            # deny (default), allow or abandon
 *   buckets:
 *     - bucket: { name: checkout, tenant: "*" }
 *       requests_per_unit: 600
 *       unit: minute
 *       strategy: requests_per_time_unit
 *     - bucket: { name: search }
 *       token_bucket: { max_tokens: 200, tokens_per_fill: 100, fill_interval_seconds: 1 }
 * ```
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { join, type Reader } from '../service/config-reader.js';
import {
  DEFAULT_ASSIGNMENT_TTL_SECONDS,
  DEFAULT_MAX_BUCKETS_PER_STREAM,
  QUOTA_UNIT_SECONDS,
  type BucketMatch,
  type QuotaRule,
  type QuotaSpec,
  type QuotaStrategy,
  type QuotaUnit,
  type UnknownBucket,
} from './spec.js';

const QUOTA_KEYS = ['buckets', 'unknown_bucket', 'unknown_bucket_ttl_seconds', 'max_buckets_per_stream'];
const RULE_KEYS = [
  'bucket',
  'requests_per_unit',
  'unit',
  'token_bucket',
  'strategy',
  'assignment_ttl_seconds',
  'abandon_after_seconds',
];
const TOKEN_BUCKET_KEYS = ['max_tokens', 'tokens_per_fill', 'fill_interval_seconds'];
const UNKNOWN: readonly UnknownBucket[] = ['deny', 'allow', 'abandon'];
const STRATEGIES: readonly QuotaStrategy[] = ['token_bucket', 'requests_per_time_unit'];
const UNITS = Object.keys(QUOTA_UNIT_SECONDS) as QuotaUnit[];

/** readQuota returns a domain's `quota:` section, or undefined (its problems recorded in `reader`). */
export function readQuota(reader: Reader, node: Node | null, path: string): QuotaSpec | undefined {
  const f = reader.fields(node, path, QUOTA_KEYS);
  if (f === undefined) return undefined;
  const buckets = readRules(reader, f.get('buckets'), join(path, 'buckets'), node);
  const unknownBucket = f.has('unknown_bucket')
    ? oneOf(reader, f.get('unknown_bucket'), join(path, 'unknown_bucket'), UNKNOWN)
    : 'deny';
  const unknownBucketTtlSeconds = f.has('unknown_bucket_ttl_seconds')
    ? seconds(reader, f.get('unknown_bucket_ttl_seconds'), join(path, 'unknown_bucket_ttl_seconds'))
    : DEFAULT_ASSIGNMENT_TTL_SECONDS;
  const maxBucketsPerStream = f.has('max_buckets_per_stream')
    ? wholeAbove0(reader, f.get('max_buckets_per_stream'), join(path, 'max_buckets_per_stream'))
    : DEFAULT_MAX_BUCKETS_PER_STREAM;
  if (buckets === undefined || unknownBucket === undefined) return undefined;
  if (unknownBucketTtlSeconds === undefined || maxBucketsPerStream === undefined) return undefined;
  return { buckets, unknownBucket, unknownBucketTtlSeconds, maxBucketsPerStream };
}

function readRules(
  reader: Reader,
  node: Node | null | undefined,
  path: string,
  at: Node | null,
): QuotaRule[] | undefined {
  if (node === undefined) return reader.fail(at, path, 'is required: a list of `- bucket: {key: value}` rules');
  if (!isSeq(node)) return reader.fail(node, path, 'must be a list of `- bucket: {key: value}` rules');
  const rules: QuotaRule[] = [];
  node.items.forEach((item, i) => {
    const rule = readRule(reader, item as Node | null, join(path, i));
    if (rule !== undefined) rules.push(rule);
  });
  return rules.length === node.items.length ? rules : undefined;
}

interface Budget {
  readonly limit: number;
  readonly periodSeconds: number;
  readonly unit: QuotaUnit | undefined;
  readonly maxTokens: number;
}

function readRule(reader: Reader, node: Node | null, path: string): QuotaRule | undefined {
  const f = reader.fields(node, path, RULE_KEYS);
  if (f === undefined || node === null) return undefined;
  const match = f.has('bucket')
    ? readMatch(reader, f.get('bucket') ?? null, join(path, 'bucket'))
    : reader.fail(node, join(path, 'bucket'), 'is required: the bucket id keys and values this rule matches');
  const budget = readBudget(reader, f, path, node);
  const strategy = f.has('strategy')
    ? oneOf(reader, f.get('strategy'), join(path, 'strategy'), STRATEGIES)
    : 'token_bucket';
  if (strategy === 'requests_per_time_unit' && budget !== undefined && budget.unit === undefined)
    reader.fail(
      f.get('strategy'),
      join(path, 'strategy'),
      'requests_per_time_unit needs the limit as requests_per_unit and unit (second, minute, hour or day), not a token_bucket',
    );
  const ttl = f.has('assignment_ttl_seconds')
    ? seconds(reader, f.get('assignment_ttl_seconds'), join(path, 'assignment_ttl_seconds'))
    : DEFAULT_ASSIGNMENT_TTL_SECONDS;
  const abandon = f.has('abandon_after_seconds')
    ? seconds(reader, f.get('abandon_after_seconds'), join(path, 'abandon_after_seconds'))
    : undefined;
  if (match === undefined || budget === undefined || strategy === undefined || ttl === undefined) return undefined;
  if (f.has('abandon_after_seconds') && abandon === undefined) return undefined;
  if (strategy === 'requests_per_time_unit' && budget.unit === undefined) return undefined;
  return {
    match,
    ...budget,
    strategy,
    assignmentTtlSeconds: ttl,
    abandonAfterSeconds: abandon,
    at: reader.where(node),
  };
}

function readMatch(reader: Reader, node: Node | null, path: string): BucketMatch[] | undefined {
  if (!isMap(node) || node.items.length === 0)
    return reader.fail(node, path, 'must be a mapping of bucket id keys to values (`*` matches any run of characters)');
  const match: BucketMatch[] = [];
  for (const pair of node.items) {
    const key = reader.text(pair.key as Node | null, path, 'a non-empty key');
    const value = reader.text(pair.value as Node | null, join(path, key ?? '?'), 'a non-empty string');
    if (key === '' || value === '')
      reader.fail(
        pair.key as Node,
        join(path, key ?? '?'),
        'keys and values must be non-empty, as in an Envoy BucketId',
      );
    else if (key !== undefined && value !== undefined) match.push({ key, value });
  }
  return match.length === node.items.length ? match : undefined;
}

function readBudget(reader: Reader, f: Map<string, Node | null>, path: string, node: Node): Budget | undefined {
  const perUnit = f.has('requests_per_unit') || f.has('unit');
  if (perUnit && f.has('token_bucket'))
    return reader.fail(
      f.get('token_bucket'),
      join(path, 'token_bucket'),
      'give the limit once: requests_per_unit with unit, or token_bucket',
    );
  if (f.has('token_bucket')) return readTokenBucket(reader, f.get('token_bucket') ?? null, join(path, 'token_bucket'));
  if (!perUnit) return reader.fail(node, path, 'needs a limit: requests_per_unit with unit, or token_bucket');
  const limit = f.has('requests_per_unit')
    ? reader.count(f.get('requests_per_unit'), join(path, 'requests_per_unit'))
    : reader.fail(node, join(path, 'requests_per_unit'), 'is required with unit');
  const unit = f.has('unit')
    ? oneOf(reader, f.get('unit'), join(path, 'unit'), UNITS)
    : reader.fail(node, join(path, 'unit'), 'is required with requests_per_unit (second, minute, hour or day)');
  if (limit === undefined || unit === undefined) return undefined;
  return { limit, periodSeconds: QUOTA_UNIT_SECONDS[unit], unit, maxTokens: Math.max(1, limit) };
}

function readTokenBucket(reader: Reader, node: Node | null, path: string): Budget | undefined {
  const f = reader.fields(node, path, TOKEN_BUCKET_KEYS);
  if (f === undefined) return undefined;
  const need = (key: string) =>
    f.has(key) ? wholeAbove0(reader, f.get(key), join(path, key)) : reader.fail(node, join(path, key), 'is required');
  const maxTokens = need('max_tokens');
  const limit = need('tokens_per_fill');
  // Envoy's RLQS client reads a fill interval in whole seconds.
  const periodSeconds = need('fill_interval_seconds');
  if (maxTokens === undefined || limit === undefined || periodSeconds === undefined) return undefined;
  return { limit, periodSeconds, unit: undefined, maxTokens };
}

function oneOf<T extends string>(
  reader: Reader,
  node: Node | null | undefined,
  path: string,
  allowed: readonly T[],
): T | undefined {
  const text = reader.text(node, path, `one of ${allowed.join(', ')}`);
  if (text === undefined) return undefined;
  if ((allowed as readonly string[]).includes(text)) return text as T;
  return reader.fail(node, path, `unknown value ${JSON.stringify(text)}; expected one of ${allowed.join(', ')}`);
}

function wholeAbove0(reader: Reader, node: Node | null | undefined, path: string): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= 4_294_967_295) return v;
  return reader.fail(node, path, 'must be a whole number from 1 to 4294967295');
}

function seconds(reader: Reader, node: Node | null | undefined, path: string): number | undefined {
  const v = isScalar(node) ? node.value : undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= 31_536_000) return v;
  return reader.fail(node, path, 'must be a whole number of seconds from 1 to 31536000 (a year)');
}
