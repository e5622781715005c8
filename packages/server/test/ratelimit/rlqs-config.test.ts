import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatConfigError, parseDescriptorConfig } from '../../src/ratelimit/service/config.js';

function errorsOf(text: string): string[] {
  const parsed = parseDescriptorConfig(text, 'quota.yaml');
  return 'errors' in parsed ? parsed.errors.map(formatConfigError) : [];
}

describe('the quota section of a descriptor file', () => {
  it('read rules with their defaults', () => {
    const parsed = parseDescriptorConfig(
      `domain: edge
quota:
  buckets:
    - bucket: { name: api, tenant: "t-*" }
      requests_per_unit: 60
      unit: minute
    - bucket: { name: tb }
      token_bucket: { max_tokens: 10, tokens_per_fill: 5, fill_interval_seconds: 2 }
      strategy: token_bucket
      assignment_ttl_seconds: 5
      abandon_after_seconds: 60
`,
      'quota.yaml',
    );
    assert.ok(!('errors' in parsed), JSON.stringify(parsed));
    const quota = parsed.config.domains[0]!.quota!;
    assert.equal(quota.unknownBucket, 'deny');
    assert.equal(quota.maxBucketsPerStream, 1000);
    const [a, b] = quota.buckets;
    assert.deepEqual(a!.match, [
      { key: 'name', value: 'api' },
      { key: 'tenant', value: 't-*' },
    ]);
    assert.deepEqual(
      [a!.limit, a!.periodSeconds, a!.unit, a!.strategy, a!.assignmentTtlSeconds],
      [60, 60, 'minute', 'token_bucket', 30],
    );
    assert.deepEqual(
      [b!.limit, b!.periodSeconds, b!.maxTokens, b!.abandonAfterSeconds, b!.at],
      [5, 2, 10, 60, 'quota.yaml:7:7'],
    );
  });

  it('report each mistake at its file, line and column', () => {
    const errors = errorsOf(`domain: edge
quota:
  unknown_bucket: drop
  max_buckets_per_stream: 0
  buckets:
    - bucket: { name: api }
      requests_per_unit: 60
      unit: week
    - bucket: {}
      requests_per_unit: 1
      unit: second
    - bucket: { name: x }
    - bucket: { name: y }
      token_bucket: { max_tokens: 1, tokens_per_fill: 1, fill_interval_seconds: 1 }
      strategy: requests_per_time_unit
    - bucket: { name: z }
      requests_per_unit: 1
      unit: second
      token_bucket: { max_tokens: 1, tokens_per_fill: 1 }
      assignment_ttl_seconds: -1
      colour: red
`);
    assert.deepEqual(errors, [
      'quota.yaml:8:13: quota.buckets[0].unit: unknown value "week"; expected one of second, minute, hour, day',
      'quota.yaml:9:15: quota.buckets[1].bucket: must be a mapping of bucket id keys to values (`*` matches any run of characters)',
      'quota.yaml:12:7: quota.buckets[2]: needs a limit: requests_per_unit with unit, or token_bucket',
      'quota.yaml:15:17: quota.buckets[3].strategy: requests_per_time_unit needs the limit as requests_per_unit and unit (second, minute, hour or day), not a token_bucket',
      'quota.yaml:21:7: quota.buckets[4].colour: unknown key "colour"; expected one of bucket, requests_per_unit, unit, token_bucket, strategy, assignment_ttl_seconds, abandon_after_seconds',
      'quota.yaml:19:21: quota.buckets[4].token_bucket: give the limit once: requests_per_unit with unit, or token_bucket',
      'quota.yaml:20:31: quota.buckets[4].assignment_ttl_seconds: must be a whole number of seconds from 1 to 31536000 (a year)',
      'quota.yaml:3:19: quota.unknown_bucket: unknown value "drop"; expected one of deny, allow, abandon',
      'quota.yaml:4:27: quota.max_buckets_per_stream: must be a whole number from 1 to 4294967295',
    ]);
  });
});
