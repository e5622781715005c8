/**
 * A direct protobuf encoder for the one message the service sends most, `RateLimitResponse`,
 * written from a {@link DecisionResult} into one buffer sized first, without the intermediate
 * object that protobufjs would convert. Field numbers are Envoy's (see `packages/server/proto`);
 * fields at their proto3 default are left out, as any proto3 encoder does. A test decodes its
 * output with the .proto files and compares it with the generic encoder's.
 */
import type { DecisionResult, DescriptorStatus } from './service.js';
import { RESPONSE_UNIT_NUMBER } from './units.js';

const CODE = { OK: 1, OVER_LIMIT: 2 } as const;
/** The longest duration written, for a wait that never ends: uint32's maximum in seconds. */
const FOREVER_MS = 4_294_967_295_000;

/** varintSize returns how many bytes `value` takes as a varint. */
export function varintSize(value: number): number {
  let n = 1;
  for (let v = value; v > 0x7f; v = Math.floor(v / 128)) n++;
  return n;
}

/** uintSize returns the bytes of a varint field holding `value` (0: none, proto3 leaves it out); every field number here is below 16, so each tag is one byte. */
export function uintSize(value: number): number {
  return value === 0 ? 0 : 1 + varintSize(value);
}

/** lengthSize returns the bytes of a length-delimited field of `length` bytes. */
export function lengthSize(length: number): number {
  return 1 + varintSize(length) + length;
}

/** The sizes of one status's parts, computed once and used to write it. */
interface StatusLayout {
  readonly status: DescriptorStatus;
  readonly limitSize: number;
  readonly nameBytes: number;
  readonly seconds: number;
  readonly nanos: number;
  readonly durationSize: number;
  readonly size: number;
}

function layoutOf(s: DescriptorStatus): StatusLayout {
  const rule = s.rule !== undefined && s.rule.unit !== undefined ? s.rule : undefined;
  const nameBytes = rule?.name === undefined ? 0 : Buffer.byteLength(rule.name, 'utf8');
  const limitSize =
    rule === undefined
      ? -1
      : uintSize(rule.requestsPerUnit) +
        uintSize(RESPONSE_UNIT_NUMBER[rule.unit!]) +
        (nameBytes === 0 ? 0 : lengthSize(nameBytes));
  const whole = Number.isFinite(s.durationUntilResetMs) ? Math.floor(s.durationUntilResetMs) : FOREVER_MS;
  const seconds = Math.floor(whole / 1000);
  const nanos = (whole % 1000) * 1_000_000;
  const durationSize = s.durationUntilResetMs > 0 ? uintSize(seconds) + uintSize(nanos) : -1;
  const size =
    uintSize(CODE[s.code]) +
    (limitSize < 0 ? 0 : lengthSize(limitSize)) +
    uintSize(s.limitRemaining) +
    (durationSize < 0 ? 0 : lengthSize(durationSize));
  return { status: s, limitSize, nameBytes, seconds, nanos, durationSize, size };
}

/** Cursor writes protobuf parts into a buffer of the right size (field numbers below 16). */
export class Cursor {
  at = 0;
  constructor(readonly buffer: Buffer) {}

  varint(value: number): void {
    let v = value;
    while (v > 0x7f) {
      this.buffer[this.at++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buffer[this.at++] = v;
  }

  uint(field: number, value: number): void {
    if (value === 0) return;
    this.buffer[this.at++] = field << 3;
    this.varint(value);
  }

  /** open writes the tag and length of a length-delimited field of `length` bytes. */
  open(field: number, length: number): void {
    this.buffer[this.at++] = (field << 3) | 2;
    this.varint(length);
  }

  text(field: number, value: string, bytes: number): void {
    if (bytes === 0) return;
    this.open(field, bytes);
    this.at += this.buffer.write(value, this.at, bytes, 'utf8');
  }
}

function writeStatus(c: Cursor, l: StatusLayout): void {
  const s = l.status;
  c.open(2, l.size);
  c.uint(1, CODE[s.code]);
  if (l.limitSize >= 0) {
    c.open(2, l.limitSize);
    c.uint(1, s.rule!.requestsPerUnit);
    c.uint(2, RESPONSE_UNIT_NUMBER[s.rule!.unit!]);
    c.text(3, s.rule!.name ?? '', l.nameBytes);
  }
  c.uint(3, s.limitRemaining);
  if (l.durationSize >= 0) {
    c.open(4, l.durationSize);
    c.uint(1, l.seconds);
    c.uint(2, l.nanos);
  }
}

/** encodeRateLimitResponse returns `result` as the bytes of an `envoy.service.ratelimit.v3.RateLimitResponse`. */
export function encodeRateLimitResponse(result: DecisionResult): Buffer {
  const layouts = result.statuses.map(layoutOf);
  const headerBytes = result.headers.map(
    ([key, value]) => [Buffer.byteLength(key, 'utf8'), Buffer.byteLength(value, 'utf8')] as const,
  );
  let total = uintSize(CODE[result.overallCode]);
  for (const l of layouts) total += lengthSize(l.size);
  for (const [k, v] of headerBytes) total += lengthSize((k === 0 ? 0 : lengthSize(k)) + (v === 0 ? 0 : lengthSize(v)));
  const c = new Cursor(Buffer.allocUnsafe(total));
  c.uint(1, CODE[result.overallCode]);
  for (const l of layouts) writeStatus(c, l);
  result.headers.forEach(([key, value], i) => {
    const [k, v] = headerBytes[i]!;
    c.open(3, (k === 0 ? 0 : lengthSize(k)) + (v === 0 ? 0 : lengthSize(v)));
    c.text(1, key, k);
    c.text(2, value, v);
  });
  return c.buffer;
}
