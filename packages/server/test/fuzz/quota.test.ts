/**
 * Fuzzing the RLQS wire decoding and stream handling, called directly (support/fuzz.ts): any bytes
 * give a report or a QuotaStreamError naming what is wrong; a stream fed any reports answers them
 * or ends with INVALID_ARGUMENT or RESOURCE_EXHAUSTED, never INTERNAL, within the time limit.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from 'floodgate';
import { parseUsageReport, QuotaStreamError, readBucketId } from '../../src/ratelimit/quota/report.js';
import { QuotaService, type QuotaStream } from '../../src/ratelimit/quota/service.js';
import { fuzz, fuzzAsync } from '../../../floodgate/test/support/fuzz.js';
import { hostileText } from '../../../floodgate/test/support/hostile.js';
import { runs } from '../../../floodgate/test/support/sweep.js';
import { domainsOf, START_MS } from '../ratelimit/support.js';

const FIXTURES = new URL('../ratelimit/fixtures/', import.meta.url).pathname;

/** Protocol buffer pieces, written by hand so that they can be wrong. */
function varint(value: bigint): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, value);
  do {
    const low = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? low : low | 0x80);
  } while (v !== 0n);
  return out;
}
const tag = (field: number, wire: number): number[] => varint(BigInt(field * 8 + wire));
const delimited = (field: number, bytes: readonly number[]): number[] => [
  ...tag(field, 2),
  ...varint(BigInt(bytes.length)),
  ...bytes,
];
const text = (t: string): number[] => [...Buffer.from(t, 'utf8')];

const wireNumber = fc.oneof(
  fc.constantFrom(0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n, -1n, -(2n ** 31n)),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
);
/** A field as the decoder might meet it: right, of the wrong wire type, unknown, or random bytes. */
const noise = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 40 }), wireNumber).map(([f, n]) => [...tag(f, 0), ...varint(n)]),
  fc.tuple(fc.integer({ min: 1, max: 40 }), fc.uint8Array({ maxLength: 8 })).map(([f, b]) => delimited(f, [...b])),
  fc
    .tuple(fc.integer({ min: 1, max: 40 }), fc.constantFrom(1, 3, 4, 5, 6, 7))
    .map(([f, w]) => [...tag(f, w), 1, 2, 3, 4]),
  fc.uint8Array({ maxLength: 12 }).map((b) => [...b]),
);
const entry = fc
  .tuple(
    fc.oneof(fc.constantFrom('name', 'api', ''), hostileText(2)),
    fc.oneof(fc.constantFrom('api', 'web', ''), hostileText(2)),
  )
  .map(([k, v]) => delimited(1, [...delimited(1, text(k)), ...delimited(2, text(v))]));
const bucketId = fc
  .array(fc.oneof({ weight: 4, arbitrary: entry }, { weight: 1, arbitrary: noise }), { maxLength: 4 })
  .map((parts) => parts.flat());
const duration = fc
  .tuple(wireNumber, wireNumber)
  .map(([s, n]) => [...tag(1, 0), ...varint(s), ...tag(2, 0), ...varint(n)]);
const usage = fc
  .record({
    id: fc.option(bucketId, { nil: undefined }),
    elapsed: fc.option(duration, { nil: undefined }),
    allowed: fc.option(wireNumber, { nil: undefined }),
    denied: fc.option(wireNumber, { nil: undefined }),
    extra: fc.array(noise, { maxLength: 2 }),
  })
  .map((u) => [
    ...(u.id === undefined ? [] : delimited(1, u.id)),
    ...(u.elapsed === undefined ? [] : delimited(2, u.elapsed)),
    ...(u.allowed === undefined ? [] : [...tag(3, 0), ...varint(u.allowed)]),
    ...(u.denied === undefined ? [] : [...tag(4, 0), ...varint(u.denied)]),
    ...u.extra.flat(),
  ]);
/** A report: a domain and usages, with noise between, and then perhaps cut short. */
const report = fc
  .tuple(
    fc.option(fc.oneof(fc.constantFrom('edge', 'quota', ''), hostileText(2)), { nil: undefined }),
    fc.array(fc.oneof({ weight: 4, arbitrary: usage.map((u) => delimited(2, u)) }, { weight: 1, arbitrary: noise }), {
      maxLength: 6,
    }),
    fc.option(fc.nat(), { nil: undefined }),
  )
  .map(([domain, parts, cut]) => {
    const bytes = [...(domain === undefined ? [] : delimited(1, text(domain))), ...parts.flat()];
    return Buffer.from(cut === undefined || bytes.length === 0 ? bytes : bytes.slice(0, cut % bytes.length));
  });
/** A well-formed report of domain `edge` (rlqs-shared.yaml), so that the stream reaches its grants. */
const goodReport = fc
  .array(fc.tuple(fc.constantFrom('api', 'web'), fc.nat({ max: 1000 }), fc.nat({ max: 60 })), {
    minLength: 1,
    maxLength: 3,
  })
  .map((usages) =>
    Buffer.from([
      ...delimited(1, text('edge')),
      ...usages.flatMap(([name, allowed, seconds]) =>
        delimited(2, [
          ...delimited(1, delimited(1, [...delimited(1, text('name')), ...delimited(2, text(name))])),
          ...delimited(2, [...tag(1, 0), ...varint(BigInt(seconds))]),
          ...tag(3, 0),
          ...varint(BigInt(allowed)),
        ]),
      ),
    ]),
  );
const anyReport = fc.oneof(
  { weight: 2, arbitrary: goodReport },
  { weight: 6, arbitrary: report },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
);

const isReportError = (error: unknown): boolean => error instanceof QuotaStreamError;

/** A stream the service reads from and writes to, that settles when it answers or ends the stream. */
class FakeStream extends EventEmitter {
  readonly written: Buffer[] = [];
  status: { code: number; details: string } | undefined;

  write(message: Buffer): boolean {
    this.written.push(message);
    return true;
  }
  end(): void {}
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error') this.status = args[0] as { code: number; details: string };
    return super.emit(event, ...args);
  }
}

describe('fuzzing RLQS', () => {
  it('parseUsageReport and readBucketId: a checked report, or a QuotaStreamError', () => {
    fuzz(
      'RLQS report decoder',
      anyReport,
      (bytes) => {
        const parsed = parseUsageReport(bytes);
        for (const u of parsed.usages) {
          assert.ok(Number.isSafeInteger(u.allowed) && Number.isSafeInteger(u.denied) && u.elapsedMs >= 0);
          const id = readBucketId(u);
          assert.ok(Object.keys(id).length > 0);
        }
      },
      { runs: runs(4000), typed: isReportError },
    );
  });

  it('a stream fed any reports answers them, or ends with INVALID_ARGUMENT or RESOURCE_EXHAUSTED', async () => {
    const domains = domainsOf(readFileSync(FIXTURES + 'rlqs-shared.yaml', 'utf8'));
    const quota = new QuotaService({ domains, clock: new ManualClock(START_MS), redistributeDelayMs: 1 });
    let answered = 0;
    await fuzzAsync(
      'RLQS stream (QuotaService.handle)',
      fc.array(anyReport, { minLength: 1, maxLength: 4 }),
      async (reports) => {
        const stream = new FakeStream();
        quota.handle(stream as unknown as QuotaStream);
        for (const r of reports) stream.emit('data', r);
        // Reports are answered in order, each after the ledger's promise: wait for the queue to drain.
        for (let i = 0; i < 20 && stream.status === undefined; i++) await new Promise((r) => setImmediate(r));
        stream.emit('end');
        if (stream.written.length > 0) answered++;
        if (stream.status !== undefined) assert.ok([3, 8].includes(stream.status.code), JSON.stringify(stream.status));
      },
      { runs: runs(1500) },
    );
    quota.close();
    assert.ok(answered > 0, 'no report was well formed enough to be answered: the inputs miss the grant path');
  });
});
