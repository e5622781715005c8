/**
 * Envoy's quota buckets: a bucket id's canonical key (its keys sorted, as the order of a
 * `BucketId`'s keys does not matter), and the first rule of a domain that matches it.
 */
import { globMatches } from '../service/rules.js';
import type { BucketMatch, QuotaRule, QuotaSpec } from './spec.js';

/** BucketId is a bucket id's keys and values, as Envoy's `BucketId.bucket` carries them. */
export type BucketId = Readonly<Record<string, string>>;

/**
 * bucketKeyOf returns `domain` and the bucket id's entries sorted by key, as one string: one
 * bucket, one budget. Parts are joined by NUL, which no key or value of a config can hold, and
 * whose presence in a reported id only makes that id its own (unmatched or separate) bucket.
 */
export function bucketKeyOf(domain: string, bucket: BucketId): string {
  const keys = Object.keys(bucket);
  if (keys.length > 1) keys.sort();
  let key = domain;
  for (const k of keys) key += `\0${k}\0${bucket[k]!}`;
  return key;
}

function entryMatches(m: BucketMatch, bucket: BucketId): boolean {
  const value = Object.hasOwn(bucket, m.key) ? bucket[m.key] : undefined;
  if (value === undefined) return false;
  return m.value.includes('*') ? globMatches(m.value.split('*'), value) : m.value === value;
}

/** ruleOf returns the first rule of `spec` whose every entry the bucket id matches, or undefined. */
export function ruleOf(spec: QuotaSpec, bucket: BucketId): QuotaRule | undefined {
  return spec.buckets.find((rule) => rule.match.every((m) => entryMatches(m, bucket)));
}
