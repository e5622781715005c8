/**
 * Protobuf on the RLQS stream, written by hand: a reader for the parts of a report the service
 * takes (varints up to 2^53, lengths, unknown fields skipped), and a writer of `BucketAction`s and
 * `RateLimitQuotaResponse`s from {@link BucketAction} models, each action into one buffer sized
 * first. Field numbers are Envoy's (`packages/server/proto`); fields at their proto3 default are
 * left out, except a oneof member, which proto3 always writes. A test decodes the writer's output,
 * and encodes the reader's input, with the .proto files.
 */
import { Cursor, lengthSize, uintSize } from '../service/wire.js';
import type { BucketAction, Duration, RateLimitStrategy } from './actions.js';

/** WIRE names protobuf's wire types. */
export const WIRE = { VARINT: 0, FIXED64: 1, LENGTH: 2, FIXED32: 5 } as const;

/** TOO_BIG is what {@link WireReader.varint} returns for a value of 2^53 or more (a negative int64 among them). */
export const TOO_BIG = -1;

/**
 * WireReader reads protobuf from `bytes[at, end)` with no allocation per field: {@link field}
 * returns the next field's number and {@link is} tells its wire type, and a nested message is read
 * in place between {@link enter} and {@link leave}. `fail` makes the error for bytes that are not
 * the message.
 */
export class WireReader {
  /** The wire type of the field {@link field} returned last. */
  private wire = 0;

  /** Creates a reader of `bytes` from `at` to `end`. */
  constructor(
    readonly bytes: Uint8Array,
    public at: number,
    public end: number,
    private readonly fail: (what: string) => Error,
  ) {}

  /** more returns true while bytes of the current message are left. */
  get more(): boolean {
    return this.at < this.end;
  }

  /** varint returns the next varint, or {@link TOO_BIG} for one of 2^53 or more. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.end) throw this.fail(`a varint runs past the end at byte ${this.at}`);
      const b = this.bytes[this.at++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value > Number.MAX_SAFE_INTEGER ? TOO_BIG : value;
      scale *= 128;
    }
    throw this.fail(`a varint is longer than 10 bytes at byte ${this.at}`);
  }

  /** field returns the next field's number; {@link is} tells its wire type. */
  field(): number {
    const tag = this.varint();
    if (tag === TOO_BIG || tag < 8) throw this.fail(`field tag ${tag} at byte ${this.at} is not a field`);
    this.wire = tag & 7;
    return Math.floor(tag / 8);
  }

  /** length returns the length of the length-delimited field that starts here, checked against the end. */
  private length(): number {
    const length = this.varint();
    if (length === TOO_BIG || this.at + length > this.end)
      throw this.fail(`a field of ${length} bytes at byte ${this.at} runs past the end`);
    return length;
  }

  /** enter makes the nested message that starts here the current one, and returns the end to {@link leave} with. */
  enter(): number {
    const outer = this.end;
    const length = this.length();
    this.end = this.at + length;
    return outer;
  }

  /** leave goes back to the enclosing message once the nested one has been read. */
  leave(outer: number): void {
    this.at = this.end;
    this.end = outer;
  }

  /** slice returns the length-delimited field that starts here as a view of the bytes. */
  slice(): Uint8Array {
    const length = this.length();
    this.at += length;
    return this.bytes.subarray(this.at - length, this.at);
  }

  /** text returns the length-delimited field that starts here as UTF-8. */
  text(): string {
    const length = this.length();
    this.at += length;
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.at - length, length).toString('utf8');
  }

  /** is returns true when the field {@link field} returned last has wire type `wire`. */
  is(wire: number): boolean {
    return this.wire === wire;
  }

  /** skip moves past the field {@link field} returned last, which the reader does not take. */
  skip(): void {
    const wire = this.wire;
    if (wire === WIRE.VARINT) this.varint();
    else if (wire === WIRE.LENGTH) this.slice();
    else if (wire === WIRE.FIXED64 || wire === WIRE.FIXED32) this.at += wire === WIRE.FIXED64 ? 8 : 4;
    else throw this.fail(`wire type ${wire} at byte ${this.at} is not one proto3 writes`);
    if (this.at > this.end) throw this.fail(`a field runs past the end at byte ${this.at}`);
  }

  /** wrongWire returns the error for field `name`, whose wire type should have been `expected`. */
  wrongWire(expected: number, name: string): Error {
    return this.fail(`${name} has wire type ${this.wire}, not ${expected}, before byte ${this.at}`);
  }
}

/** ActionCursor is the service's {@link Cursor} with what actions need besides: a oneof member at 0, and bytes kept encoded. */
class ActionCursor extends Cursor {
  /** always writes a varint field even at 0, as proto3 writes a oneof member. */
  always(field: number, value: number): void {
    this.buffer[this.at++] = field << 3;
    this.varint(value);
  }

  bytes(field: number, value: Uint8Array): void {
    this.open(field, value.length);
    this.buffer.set(value, this.at);
    this.at += value.length;
  }
}

function durationSize(d: Duration): number {
  return uintSize(d.seconds) + uintSize(d.nanos ?? 0);
}

function writeDuration(c: ActionCursor, field: number, d: Duration): void {
  c.open(field, durationSize(d));
  c.uint(1, d.seconds);
  c.uint(2, d.nanos ?? 0);
}

const RATE_LIMIT_UNIT: Readonly<Record<string, number>> = { SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4 };

/** The sizes inside a strategy: the chosen member's body and, for a token bucket, its `tokens_per_fill` wrapper. */
function strategySizes(s: RateLimitStrategy): { member: number; fill: number } {
  if ('blanket_rule' in s) return { member: -1, fill: 0 };
  if ('requests_per_time_unit' in s) {
    const r = s.requests_per_time_unit;
    return { member: uintSize(r.requests_per_time_unit) + uintSize(RATE_LIMIT_UNIT[r.time_unit] ?? 0), fill: 0 };
  }
  const t = s.token_bucket;
  const fill = uintSize(t.tokens_per_fill.value >>> 0);
  const member = uintSize(t.max_tokens >>> 0) + lengthSize(fill) + lengthSize(durationSize(t.fill_interval));
  return { member, fill };
}

function strategySize(s: RateLimitStrategy, sizes: { member: number }): number {
  // A oneof member is written even at its default (ALLOW_ALL is 0).
  return 'blanket_rule' in s ? 2 : lengthSize(sizes.member);
}

function writeStrategy(c: ActionCursor, s: RateLimitStrategy, sizes: { member: number; fill: number }): void {
  if ('blanket_rule' in s) return c.always(1, s.blanket_rule === 'DENY_ALL' ? 1 : 0);
  if ('requests_per_time_unit' in s) {
    c.open(2, sizes.member);
    c.uint(1, s.requests_per_time_unit.requests_per_time_unit);
    return c.uint(2, RATE_LIMIT_UNIT[s.requests_per_time_unit.time_unit] ?? 0);
  }
  const t = s.token_bucket;
  c.open(3, sizes.member);
  c.uint(1, t.max_tokens >>> 0);
  c.open(2, sizes.fill);
  c.uint(1, t.tokens_per_fill.value >>> 0);
  writeDuration(c, 3, t.fill_interval);
}

/**
 * encodeBucketAction returns `action` for the bucket whose `BucketId` is `bucketId` (its encoded
 * bytes, as the client sent them) as the bytes of a `RateLimitQuotaResponse.BucketAction`.
 */
export function encodeBucketAction(bucketId: Uint8Array, action: BucketAction): Buffer {
  const idSize = lengthSize(bucketId.length);
  if ('abandon_action' in action) {
    const c = new ActionCursor(Buffer.allocUnsafe(idSize + 2));
    c.bytes(1, bucketId);
    c.open(3, 0);
    return c.buffer;
  }
  const q = action.quota_assignment_action;
  const sizes = strategySizes(q.rate_limit_strategy);
  const ttlSize = durationSize(q.assignment_time_to_live);
  const strategyBody = strategySize(q.rate_limit_strategy, sizes);
  const assignment = lengthSize(ttlSize) + lengthSize(strategyBody);
  const c = new ActionCursor(Buffer.allocUnsafe(idSize + lengthSize(assignment)));
  c.bytes(1, bucketId);
  c.open(2, assignment);
  writeDuration(c, 2, q.assignment_time_to_live);
  c.open(3, strategyBody);
  writeStrategy(c, q.rate_limit_strategy, sizes);
  return c.buffer;
}

/** encodeResponse returns a `RateLimitQuotaResponse` of `actions` (each the bytes of a `BucketAction`). */
export function encodeResponse(actions: readonly Uint8Array[]): Buffer {
  let size = 0;
  for (const a of actions) size += lengthSize(a.length);
  const c = new ActionCursor(Buffer.allocUnsafe(size));
  for (const a of actions) c.bytes(1, a);
  return c.buffer;
}
