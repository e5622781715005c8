/**
 * Envoy's quota buckets: a bucket id's canonical key (its keys sorted, as the order of a
 * `BucketId`'s keys does not matter), and the first rule of a domain that matches it.
 */
import { globMatches } from '../service/rules.js';
import type { BucketMatch, QuotaRule, QuotaSpec } from './spec.js';

/** BucketId is a bucket id's keys and values, as Envoy's `BucketId.bucket` carries them. */
export type BucketId = Readonly<Record<string, string>>;

/** bucketKeyOf returns `domain` and the bucket id's entries sorted by key, as one string: one bucket, one budget. */
export function bucketKeyOf(domain: string, bucket: BucketId): string {
  const keys = Object.keys(bucket).sort();
  return JSON.stringify([domain, ...keys.flatMap((k) => [k, bucket[k]])]);
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
