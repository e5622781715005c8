/**
 * Request paths in normal form, so that every spelling of one resource matches (and is counted
 * against) the same route, and the upstream is sent the very spelling that was counted.
 *
 * The normal form follows RFC 3986 section 6.2.2: percent-encoded unreserved characters decoded
 * (`%6c` is `l`, `%7E` is `~`), other escapes in upper-case hex (`%2f` is `%2F`), characters that
 * may not appear raw percent-encoded, dot segments removed (section 5.2.4), and runs of slashes
 * merged. Spellings that upstreams disagree about are reported as {@link Ambiguity ambiguities}
 * beside the normal form, which treats each as stated there; the gateway then refuses or forwards
 * the normal form by its configured stance. The module is pure: no I/O, no state.
 */
import { UTF8_START, escapesAreUtf8, nextUtf8 } from './utf8.js';

/**
 * AMBIGUITIES are the spellings of a path that upstreams read differently, each with what the
 * normal form makes of it:
 * - `encodedSlash`: `%2F` (some servers decode it to a separator, most keep it as data): a `/`.
 * - `backslash`: `\` or `%5C` (Windows servers and WHATWG URL parsers read it as `/`): a `/`.
 * - `pathParameter`: a `;` parameter (`/login;x=1`; Java servers drop it, others keep it): dropped.
 * - `controlCharacter`: an encoded control character such as `%00` (C code stops at NUL): kept encoded.
 * - `invalidEscape`: a `%` not followed by two hex digits (`%zz`): the `%` encoded as `%25`.
 * - `aboveRoot`: a `..` segment that would climb above `/`: dropped (RFC 3986 section 5.2.4).
 * - `fragment`: a `#` in the request target (not allowed there; some parsers cut the path at it):
 *   it and all after it dropped.
 * - `invalidUtf8`: escaped bytes that are not UTF-8, such as the overlong `%C0%AF` (some decoders
 *   read it as `/`) or a latin-1 `%E9`: kept encoded.
 */
export const AMBIGUITIES = [
  'encodedSlash',
  'backslash',
  'pathParameter',
  'controlCharacter',
  'invalidEscape',
  'aboveRoot',
  'fragment',
  'invalidUtf8',
] as const;

/** Ambiguity names one kind of ambiguous spelling (see {@link AMBIGUITIES}). */
export type Ambiguity = (typeof AMBIGUITIES)[number];

/** ambiguityBit returns the bit of `kind` in an ambiguity mask. */
export function ambiguityBit(kind: Ambiguity): number {
  return 1 << AMBIGUITIES.indexOf(kind);
}

const ENCODED_SLASH = ambiguityBit('encodedSlash');
const BACKSLASH = ambiguityBit('backslash');
const PATH_PARAMETER = ambiguityBit('pathParameter');
const CONTROL = ambiguityBit('controlCharacter');
const INVALID_ESCAPE = ambiguityBit('invalidEscape');
const ABOVE_ROOT = ambiguityBit('aboveRoot');
const FRAGMENT = ambiguityBit('fragment');
const INVALID_UTF8 = ambiguityBit('invalidUtf8');

/** ambiguitiesIn returns the names of the ambiguities in `mask`, in {@link AMBIGUITIES} order. */
export function ambiguitiesIn(mask: number): Ambiguity[] {
  return AMBIGUITIES.filter((_, i) => (mask & (1 << i)) !== 0);
}

/** NormalTarget is a request target in normal form, with the ambiguities met on the way. */
export interface NormalTarget {
  /** The path in normal form; always starts with `/`. */
  readonly path: string;
  /** The query string without `?` (as sent, fragment removed), or undefined when there is none. */
  readonly query: string | undefined;
  /** A mask of {@link Ambiguity} bits (see {@link ambiguityBit}); 0 when there were none. */
  readonly ambiguities: number;
}

// Character classes of one code unit below 128: what may stay raw in a normal path.
const RAW_OK = new Uint8Array(128);
const UNRESERVED = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z0-9\-._~]/.test(ch)) UNRESERVED[c] = 1;
  // pchar = unreserved / pct-encoded / sub-delims / ":" / "@", less ";" (read as a parameter), plus "/".
  if (/[A-Za-z0-9\-._~!$&'()*+,=:@/]/.test(ch)) RAW_OK[c] = 1;
}

const SLASH = 0x2f;
const DOT = 0x2e;
const PERCENT = 0x25;
const QUESTION = 0x3f;

/**
 * normalPathEnd returns where the path of a request target ends (the index of its `?`, or its
 * length) when the path is already in normal form with no ambiguity and the target has no `#`,
 * so that {@link normalizeTarget} would change nothing; else -1. It allocates nothing: it is the
 * fast check made on every request.
 */
export function normalPathEnd(target: string): number {
  const n = target.length;
  if (n === 0 || target.charCodeAt(0) !== SLASH) return -1;
  let segmentStart = 1;
  let utf8 = UTF8_START;
  let i = 1;
  for (; i < n; i++) {
    const c = target.charCodeAt(i);
    if (c === PERCENT) {
      const byte = keptEscape(target, i);
      utf8 = byte < 0 ? -1 : nextUtf8(utf8, byte);
      if (utf8 < 0) return -1;
      i += 2;
      continue;
    }
    // A character's escaped bytes come one after another.
    if (utf8 !== UTF8_START) return -1;
    if (c === SLASH) {
      // An empty segment ("//") or a dot segment is not normal.
      if (i === segmentStart || isDotSegment(target, segmentStart, i)) return -1;
      segmentStart = i + 1;
    } else if (c === QUESTION) break;
    else if (c >= 128 || RAW_OK[c] === 0) return -1;
  }
  // The last segment, ended by the query or the target's end: a final empty segment is a trailing slash.
  if (utf8 !== UTF8_START || isDotSegment(target, segmentStart, i)) return -1;
  return i === n || target.indexOf('#', i) < 0 ? i : -1;
}

/** isNormalPath returns whether `path` (with no query) is in normal form with no ambiguity. */
export function isNormalPath(path: string): boolean {
  return normalPathEnd(path) === path.length;
}

/** Whether path[start, end) is `.` or `..`. */
function isDotSegment(path: string, start: number, end: number): boolean {
  const length = end - start;
  if (length === 1) return path.charCodeAt(start) === DOT;
  return length === 2 && path.charCodeAt(start) === DOT && path.charCodeAt(start + 1) === DOT;
}

/**
 * The byte of the escape at `i` when it stays as it is in normal form (upper-case hex of a byte
 * that is not unreserved or ambiguous), else -1.
 */
function keptEscape(path: string, i: number): number {
  const hi = upperHex(path.charCodeAt(i + 1));
  const lo = upperHex(path.charCodeAt(i + 2));
  if (hi < 0 || lo < 0) return -1;
  const byte = hi * 16 + lo;
  const kept = !(byte < 128 && UNRESERVED[byte] === 1) && byte !== SLASH && byte !== 0x5c && !isControl(byte);
  return kept ? byte : -1;
}

/** The value of an upper-case hex digit, or -1. */
function upperHex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** The value of a hex digit in either case, or -1. */
function anyHex(c: number): number {
  return c >= 0x61 && c <= 0x66 ? c - 0x61 + 10 : upperHex(c);
}

function isControl(byte: number): boolean {
  return byte < 0x20 || byte === 0x7f;
}

/**
 * normalizeTarget returns the normal form of an origin-form request target (`/path?query`), or
 * undefined when the target does not start with `/` (an absolute-form or `*` target). The query
 * is kept as sent; a fragment (`#...`) is dropped from either part and reported as `fragment`.
 *
 * Code units above 0xFF are taken as characters and encoded as UTF-8; those from 0x80 to 0xFF as
 * bytes, since node reads a request line as latin1.
 *
 * @example
 * normalizeTarget('/API/./v1//%6cogin/?a=1'); // { path: '/API/v1/login/', query: 'a=1', ambiguities: 0 }
 */
export function normalizeTarget(target: string): NormalTarget | undefined {
  const first = target.charCodeAt(0);
  if (first !== SLASH && first !== 0x5c) return undefined;
  let ambiguities = first === SLASH ? 0 : BACKSLASH;
  const hash = target.indexOf('#');
  if (hash >= 0) {
    ambiguities |= FRAGMENT;
    target = target.slice(0, hash);
  }
  const q = target.indexOf('?');
  const rawPath = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? undefined : target.slice(q + 1);
  const segments = splitSegments(rawPath);
  ambiguities |= segments.ambiguities;
  const { path, aboveRoot } = removeDotSegments(segments.list, segments.trailingSlash);
  if (aboveRoot) ambiguities |= ABOVE_ROOT;
  if (!escapesAreUtf8(path)) ambiguities |= INVALID_UTF8;
  return { path, query, ambiguities };
}

interface Segments {
  readonly list: string[];
  /** Whether the path ends in a separator (so its last segment is empty). */
  readonly trailingSlash: boolean;
  readonly ambiguities: number;
}

/**
 * The segments of a raw path in normal spelling: escapes decoded or upper-cased, raw characters
 * encoded where they may not stay raw, `;` parameters dropped, `\`, `%2F` and `%5C` taken as separators.
 */
function splitSegments(raw: string): Segments {
  const reader = new SegmentReader();
  for (let i = 1; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === SLASH) reader.cut();
    else if (c === 0x5c) reader.cut(BACKSLASH);
    else if (c === PERCENT) i = reader.escape(raw, i);
    else if (c === 0x3b) reader.parameter();
    else i = reader.raw(raw, i);
  }
  return reader.end();
}

/** SegmentReader collects the segments of one path as {@link splitSegments} reads it. */
class SegmentReader {
  private readonly list: string[] = [];
  private current = '';
  /** Whether the rest of this segment is a `;` parameter, dropped. */
  private inParameter = false;
  private ambiguities = 0;

  /** cut ends the segment at a separator (an ambiguous one when `ambiguity` is given). */
  cut(ambiguity = 0): void {
    this.ambiguities |= ambiguity;
    this.list.push(this.current);
    this.current = '';
    this.inParameter = false;
  }

  parameter(): void {
    this.ambiguities |= PATH_PARAMETER;
    this.inParameter = true;
  }

  /** escape reads the `%` at `i` and returns the index of its last character. */
  escape(raw: string, i: number): number {
    const hi = anyHex(raw.charCodeAt(i + 1));
    const lo = anyHex(raw.charCodeAt(i + 2));
    if (hi < 0 || lo < 0) {
      this.ambiguities |= INVALID_ESCAPE;
      this.append('%25');
      return i;
    }
    const byte = hi * 16 + lo;
    if (byte === SLASH) this.cut(ENCODED_SLASH);
    else if (byte === 0x5c) this.cut(BACKSLASH);
    else {
      if (isControl(byte)) this.ambiguities |= CONTROL;
      this.append(byte < 128 && UNRESERVED[byte] === 1 ? String.fromCharCode(byte) : escape(byte));
    }
    return i + 2;
  }

  /** raw reads the character at `i`, encoding it unless it may stay raw, and returns the index of its last code unit. */
  raw(raw: string, i: number): number {
    const c = raw.charCodeAt(i);
    if (c < 128 && isControl(c)) this.ambiguities |= CONTROL;
    this.append(c < 128 && RAW_OK[c] === 1 ? raw[i]! : encodeRaw(raw, i));
    // A surrogate pair is encoded whole: skip its second half.
    return c >= 0xd800 && c <= 0xdbff && i + 1 < raw.length ? i + 1 : i;
  }

  end(): Segments {
    this.list.push(this.current);
    return { list: this.list, trailingSlash: this.current === '', ambiguities: this.ambiguities };
  }

  private append(text: string): void {
    if (!this.inParameter) this.current += text;
  }
}

function escape(byte: number): string {
  return '%' + (byte < 16 ? '0' : '') + byte.toString(16).toUpperCase();
}

/** The escapes of the raw character at `i`: its byte below 0x100, else its UTF-8 bytes. */
function encodeRaw(raw: string, i: number): string {
  const c = raw.charCodeAt(i);
  if (c < 0x100) return escape(c);
  const point = raw.codePointAt(i)!;
  let out = '';
  for (const byte of Buffer.from(String.fromCodePoint(point), 'utf8')) out += escape(byte);
  return out;
}

/**
 * The path of `segments` with `.` and `..` removed (RFC 3986 section 5.2.4) and empty segments
 * merged; `aboveRoot` when a `..` had nothing left to remove.
 */
function removeDotSegments(segments: readonly string[], trailingSlash: boolean): { path: string; aboveRoot: boolean } {
  const out: string[] = [];
  let aboveRoot = false;
  // A path ending in a dot segment names its directory: "/a/b/.." is "/a/".
  let endsInDirectory = trailingSlash;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const last = i === segments.length - 1;
    if (s === '' || s === '.') {
      if (last && s === '.') endsInDirectory = true;
      continue;
    }
    if (s === '..') {
      if (out.length === 0) aboveRoot = true;
      else out.pop();
      if (last) endsInDirectory = true;
      continue;
    }
    out.push(s);
  }
  if (out.length === 0) return { path: '/', aboveRoot };
  return { path: '/' + out.join('/') + (endsInDirectory ? '/' : ''), aboveRoot };
}

const PHRASES: Record<Ambiguity, string> = {
  encodedSlash: 'an encoded slash, %2F',
  backslash: 'a backslash, \\ or %5C',
  pathParameter: 'a ; path parameter',
  controlCharacter: 'an encoded control character such as %00',
  invalidEscape: 'a % not followed by two hex digits',
  aboveRoot: 'a .. segment above the root',
  fragment: 'a # fragment',
  invalidUtf8: 'escaped bytes that are not UTF-8, such as %C0%AF',
};

/** describeAmbiguities returns the ambiguities of `mask` in words, e.g. `an encoded slash, %2F (encodedSlash)`. */
export function describeAmbiguities(mask: number): string {
  return ambiguitiesIn(mask)
    .map((kind) => `${PHRASES[kind]} (${kind})`)
    .join('; ');
}
