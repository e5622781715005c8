/** Keys of the many-keys case: `user:` and 11 zero-padded digits, 16 one-byte characters. */

const PREFIX = 'user:';
const DIGITS = 11;
const scratch = Buffer.from(PREFIX + '0'.repeat(DIGITS), 'latin1');

/**
 * keyFor returns a new flat string for key number `i`.
 *
 * `'user:' + digits` would be a V8 cons string (two objects, flattened lazily) because it is 13
 * characters or more; keys arriving from a request (an IP, a header) are flat strings, so the key
 * is decoded from a byte buffer, which yields one sequential string of 16 characters.
 */
export function keyFor(i: number): string {
  let v = i;
  for (let p = scratch.length - 1; p >= PREFIX.length; p--) {
    scratch[p] = 48 + (v % 10);
    v = Math.floor(v / 10);
  }
  return scratch.toString('latin1', 0, scratch.length);
}

/** shuffledKeys builds the keys 0..n-1 in a random order (fixed seed, so every subject sees the same order). */
export function shuffledKeys(n: number, seed = 0x9e3779b9): string[] {
  const keys = new Array<string>(n);
  for (let i = 0; i < n; i++) keys[i] = keyFor(i);
  let state = seed >>> 0;
  for (let i = n - 1; i > 0; i--) {
    // xorshift32: a small, fast, seeded generator; plenty for a shuffle.
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const j = state % (i + 1);
    const t = keys[i]!;
    keys[i] = keys[j]!;
    keys[j] = t;
  }
  return keys;
}
