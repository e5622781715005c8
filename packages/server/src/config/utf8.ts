/**
 * UTF-8 checked one byte at a time, with no allocation (RFC 3629 section 4): for percent-escaped
 * bytes in paths, where an invalid or overlong sequence (`%C0%AF`, an overlong `/`) is read
 * differently by different decoders.
 */

/** UTF8_START is the state before a character: no bytes owed. */
export const UTF8_START = 0;

/** The state owing `count` continuation bytes, the next within [low, high]. */
function owing(count: number, low: number, high: number): number {
  return (count << 16) | (low << 8) | high;
}

/**
 * nextUtf8 returns the state after `byte` in state `state` ({@link UTF8_START} at a character's
 * start), or -1 when the byte cannot come there: a lone continuation byte, a lead byte of an
 * overlong form (C0, C1, E0 80-9F, F0 80-8F), a surrogate (ED A0-BF), or beyond U+10FFFF.
 */
export function nextUtf8(state: number, byte: number): number {
  if (state === UTF8_START) {
    if (byte < 0x80) return UTF8_START;
    if (byte >= 0xc2 && byte <= 0xdf) return owing(1, 0x80, 0xbf);
    if (byte === 0xe0) return owing(2, 0xa0, 0xbf);
    if (byte === 0xed) return owing(2, 0x80, 0x9f);
    if (byte >= 0xe1 && byte <= 0xef) return owing(2, 0x80, 0xbf);
    if (byte === 0xf0) return owing(3, 0x90, 0xbf);
    if (byte >= 0xf1 && byte <= 0xf3) return owing(3, 0x80, 0xbf);
    if (byte === 0xf4) return owing(3, 0x80, 0x8f);
    return -1;
  }
  if (byte < ((state >> 8) & 0xff) || byte > (state & 0xff)) return -1;
  const count = state >> 16;
  return count === 1 ? UTF8_START : owing(count - 1, 0x80, 0xbf);
}

/**
 * escapesAreUtf8 returns whether the percent-escaped bytes of `path` (a path in normal form:
 * ASCII, with `%XX` escapes) are UTF-8, each character's bytes escaped one after another.
 */
export function escapesAreUtf8(path: string): boolean {
  let state = UTF8_START;
  for (let i = 0; i < path.length; i++) {
    if (path.charCodeAt(i) !== 0x25) {
      if (state !== UTF8_START) return false;
      continue;
    }
    state = nextUtf8(state, parseInt(path.slice(i + 1, i + 3), 16));
    if (state < 0) return false;
    i += 2;
  }
  return state === UTF8_START;
}
