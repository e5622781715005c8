import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ABANDON, assignmentOf, blanketOf, type BucketAction } from '../../src/ratelimit/quota/actions.js';
import { loadRateLimitQuotaService } from '../../src/ratelimit/quota/proto.js';
import { parseUsageReport, QuotaStreamError, readBucketId } from '../../src/ratelimit/quota/report.js';
import type { QuotaRule } from '../../src/ratelimit/quota/spec.js';
import { encodeBucketAction, encodeResponse } from '../../src/ratelimit/quota/wire.js';
import { runs } from '../../../floodgate/test/support/sweep.js';

// The proto library's own encoder and decoder, from Envoy's .proto files, as the reference.
const method = loadRateLimitQuotaService().service.StreamRateLimitQuotas!;
const encodeReport = (report: unknown): Buffer => method.requestSerialize(report);
const decodeResponse = (bytes: Buffer): { bucket_action: unknown[] } =>
  method.responseDeserialize(bytes) as { bucket_action: unknown[] };
const encodeReference = (response: unknown): Buffer => method.responseSerialize(response);

const rule = (over: Partial<QuotaRule>): QuotaRule => ({
  match: [],
  limit: 300,
  periodSeconds: 1,
  unit: undefined,
  maxTokens: 600,
  strategy: 'token_bucket',
  assignmentTtlSeconds: 30,
  abandonAfterSeconds: undefined,
  at: 'test',
  ...over,
});

const text = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
const bucketArb = fc.dictionary(text, text, { minKeys: 1, maxKeys: 4 });

describe('RLQS on the wire, against the proto library', () => {
  it('read every report the proto library writes as the library reads it (random reports)', () => {
    const usage = fc.record({
      bucket: bucketArb,
      allowed: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      denied: fc.integer({ min: 0, max: 2 ** 40 }),
      seconds: fc.integer({ min: 0, max: 2 ** 40 }),
      nanos: fc.integer({ min: 0, max: 999_999_999 }),
    });
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.array(usage, { maxLength: 12 }), (domain, usages) => {
        const bytes = encodeReport({
          domain,
          bucket_quota_usages: usages.map((u) => ({
            bucket_id: { bucket: u.bucket },
            time_elapsed: { seconds: u.seconds, nanos: u.nanos },
            num_requests_allowed: String(u.allowed),
            num_requests_denied: String(u.denied),
          })),
        });
        const report = parseUsageReport(bytes);
        assert.equal(report.domain, domain);
        assert.equal(report.usages.length, usages.length);
        report.usages.forEach((r, i) => {
          const u = usages[i]!;
          assert.deepEqual({ ...readBucketId(r) }, { ...u.bucket });
          assert.deepEqual([r.allowed, r.denied, r.elapsedMs], [u.allowed, u.denied, u.seconds * 1000 + u.nanos / 1e6]);
          // The BucketId bytes carried back decode to the same id.
          const echoed = decodeResponse(encodeResponse([encodeBucketAction(r.bucketIdBytes, ABANDON)]));
          const echoedId = (echoed.bucket_action[0] as { bucket_id: { bucket: object } }).bucket_id;
          assert.deepEqual({ ...echoedId.bucket }, { ...u.bucket });
        });
      }),
      { numRuns: runs(300) },
    );
  });

  it('skip fields it does not know, as the library does', () => {
    // Field 9 (varint 7) and field 10 (length 2) before the domain.
    const known = encodeReport({ domain: 'edge' });
    const bytes = Buffer.concat([Buffer.from([0x48, 0x07, 0x52, 0x02, 0x61, 0x62]), known]);
    assert.equal(parseUsageReport(bytes).domain, 'edge');
  });

  it('refuse bytes that are not a report, and counts or durations out of range, naming where', () => {
    const cases: Array<[Buffer, RegExp]> = [
      [
        Buffer.from([0x10, 0x05]),
        /not a RateLimitQuotaUsageReports message: bucket_quota_usages has wire type 0, not 2/,
      ],
      [Buffer.from([0x12, 0x7f, 0x01]), /a field of 127 bytes at byte 2 runs past the end/],
      [Buffer.from([0x0a, 0x80]), /a varint runs past the end/],
      [Buffer.from([0x4b]), /wire type 3 at byte 1 is not one proto3 writes/],
      [
        encodeReport({ bucket_quota_usages: [{ bucket_id: { bucket: { a: 'b' } }, num_requests_denied: '-1' }] }),
        /bucket_quota_usages\[0\]\.num_requests_denied must be a whole number from 0 to 2\^53-1/,
      ],
      [
        encodeReport({
          bucket_quota_usages: [{ bucket_id: { bucket: { a: 'b' } }, num_requests_allowed: String(2 ** 53) }],
        }),
        /num_requests_allowed must be a whole number/,
      ],
      [
        encodeReport({ bucket_quota_usages: [{ bucket_id: { bucket: { a: 'b' } }, time_elapsed: { nanos: -1 } }] }),
        /time_elapsed must be a non-negative duration/,
      ],
      [encodeReport({ bucket_quota_usages: [{ bucket_id: { bucket: { a: '' } } }] }), /non-empty strings/],
      [encodeReport({ bucket_quota_usages: [{ bucket_id: { bucket: {} } }] }), /at least one key/],
      [encodeReport({ bucket_quota_usages: [{ num_requests_allowed: 1 }] }), /bucket_id\.bucket is required/],
    ];
    // As the service reads a report: the report, then each bucket id it has not seen.
    const read = (bytes: Buffer): void => parseUsageReport(bytes).usages.forEach((u) => readBucketId(u));
    for (const [bytes, pattern] of cases)
      assert.throws(
        () => read(bytes),
        (e: unknown) => e instanceof QuotaStreamError && e.code === 'INVALID_REPORT' && pattern.test(e.message),
        `${bytes.toString('hex')} should fail with ${String(pattern)}`,
      );
  });

  it('write every action as the library reads it, and byte for byte as it writes those without a zero field', () => {
    const bucket = { name: 'checkout', tenant: 't-1' };
    const idBytes = parseUsageReport(encodeReport({ bucket_quota_usages: [{ bucket_id: { bucket } }] })).usages[0]!
      .bucketIdBytes;
    const nonZero = [
      assignmentOf(rule({}), 0),
      assignmentOf(rule({}), 1),
      assignmentOf(rule({}), 150),
      assignmentOf(rule({ limit: 2 ** 31, maxTokens: 2 ** 32 - 1 }), 2 ** 31),
      assignmentOf(rule({ strategy: 'requests_per_time_unit', unit: 'day', periodSeconds: 86_400 }), 2 ** 40),
      blanketOf('ALLOW_ALL', 5),
      ABANDON,
    ];
    // The library writes a zero it was given (`seconds: 0`, `requests_per_time_unit: 0`); proto3 leaves it out.
    const withZero = [
      assignmentOf(rule({ strategy: 'requests_per_time_unit', unit: 'minute', periodSeconds: 60 }), 0),
      blanketOf('DENY_ALL', 0),
    ];
    const reference = (actions: readonly BucketAction[]): Buffer =>
      encodeReference({ bucket_action: actions.map((a) => ({ bucket_id: { bucket }, ...a })) });
    const ours = (actions: readonly BucketAction[]): Buffer =>
      encodeResponse(actions.map((a) => encodeBucketAction(idBytes, a)));
    assert.equal(ours(nonZero).toString('hex'), reference(nonZero).toString('hex'));
    const all = [...nonZero, ...withZero];
    assert.deepEqual(decodeResponse(ours(all)), decodeResponse(reference(all)));
  });
});
