/**
 * fast-check arbitraries of hostile input, for the fuzz targets (support/fuzz.ts): text with
 * control characters, lone surrogates, percent-encodings and very long runs; numbers at and past
 * the edges; JSON-like values with prototype-pollution keys and deep nesting.
 */
import fc from 'fast-check';

/** TRICKY_TEXT are pieces that parsers tend to get wrong, glued together by {@link hostileText}. */
export const TRICKY_TEXT = [
  '',
  ' ',
  '\t',
  '\r\n',
  '\0',
  '\x7f',
  '\u2028',
  '\ufeff',
  '\ud800',
  '\udfff',
  '😀',
  'é',
  '%',
  '%2',
  '%zz',
  '%00',
  '%2F',
  '%2e%2E',
  '%C0%AF',
  '%E9',
  '%FF%FE',
  '%u0041',
  '/',
  '\\',
  '//',
  '.',
  '..',
  ';',
  '?',
  '#',
  '&',
  '=',
  ',',
  '"',
  "'",
  '[',
  ']',
  '{',
  '}',
  ':',
  '@',
  '*',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'undefined',
  'true',
  '-0',
  '1e309',
  '0x1F',
  '9007199254740993',
  '-1',
  '4294967296',
  'unknown',
  '_hidden',
  '127.0.0.1',
  '::1',
  '::ffff:10.0.0.1',
  '[2001:db8::1]:80',
  'fe80::1%eth0',
  '0177.0.0.1',
] as const;

/** hostileText returns text of up to `maxPieces` tricky pieces and random characters of any kind. */
export function hostileText(maxPieces = 24): fc.Arbitrary<string> {
  const piece = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...TRICKY_TEXT) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 6 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 4 }) },
  );
  return fc.array(piece, { maxLength: maxPieces }).map((parts) => parts.join(''));
}

/** longText returns `text` repeated into a long run (up to about `maxLength` characters). */
export function longText(text: fc.Arbitrary<string>, maxLength = 100_000): fc.Arbitrary<string> {
  return fc
    .tuple(text, fc.integer({ min: 1, max: maxLength }))
    .map(([t, length]) => (t === '' ? 'a'.repeat(length) : t.repeat(Math.ceil(length / t.length)).slice(0, length)));
}

/** anyText returns {@link hostileText} mostly, and now and then a very long run of it. */
export function anyText(maxPieces = 24): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 20, arbitrary: hostileText(maxPieces) },
    { weight: 1, arbitrary: longText(hostileText(4)) },
  );
}

/** edgeNumber returns numbers at and past the edges: NaN, infinities, -0, huge, tiny, fractions. */
export const edgeNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    NaN,
    Infinity,
    -Infinity,
    -0,
    0,
    1,
    -1,
    0.5,
    2 ** 31,
    2 ** 32,
    2 ** 32 - 1,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    1e21,
  ),
  fc.integer(),
  fc.double(),
);

/**
 * hostileJson returns JSON-like values (objects, arrays, strings, numbers, booleans, null) whose
 * keys come from `keys` (names the reader looks for) or are hostile (`__proto__`, `constructor`),
 * nested up to a few levels; `leaf` adds values of the caller's.
 */
export function hostileJson(keys: readonly string[], leaf?: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const key = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...keys) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '') },
    { weight: 1, arbitrary: hostileText(3) },
  );
  const scalar = fc.oneof(
    edgeNumber,
    hostileText(6),
    fc.constantFrom(...keys),
    fc.boolean(),
    fc.constant(null),
    ...(leaf === undefined ? [] : [leaf]),
  );
  const { value } = fc.letrec<{ value: unknown; object: Record<string, unknown>; list: unknown[] }>((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('object'), tie('list')),
    object: fc.array(fc.tuple(key, tie('value')), { maxLength: 5 }).map(objectOf),
    list: fc.array(tie('value'), { maxLength: 5 }),
  }));
  return value;
}

/** objectOf returns an object with the given own properties, `__proto__` included as an own key. */
export function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries)
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
}

/** deeplyNested returns `value` inside `depth` levels of arrays or objects (`{ key: ... }`). */
export function deeplyNested(value: unknown, depth: number, key: string): unknown {
  let out = value;
  for (let i = 0; i < depth; i++) out = i % 2 === 0 ? [out] : objectOf([[key, out]]);
  return out;
}

/** deepJsonText returns JSON text nested up to `maxDepth` levels (built as text: stringify would overflow). */
export function deepJsonText(maxDepth = 100_000): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.integer({ min: 1, max: maxDepth }),
      fc.constantFrom('[', '{"descriptors":', '{"domain":"d","descriptors":['),
    )
    .map(([depth, open]) => {
      const close = open === '[' ? ']' : open.endsWith('[') ? ']}' : '}';
      return open.repeat(depth) + '1' + close.repeat(depth);
    });
}
