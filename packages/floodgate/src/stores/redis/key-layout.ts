import { createHash } from 'node:crypto';
import type { Algorithm } from '../../core/algorithm.js';

/** LAYOUT_VERSION changes whenever the state layout in Redis does, so old states are never misread. */
const LAYOUT_VERSION = 'v1';

/**
 * policyIdOf returns the part of a Redis key naming a policy: its algorithm name and a short hash
 * of its params and the layout version, e.g. `token-bucket:3f9a1c2e`. Equal params give equal ids,
 * so every process running the same policy shares its keys.
 */
export function policyIdOf(algorithm: Algorithm): string {
  const params = Object.keys(algorithm.params)
    .sort()
    .map((name) => `${name}=${String(algorithm.params[name])}`)
    .join(',');
  const hash = createHash('sha1').update(`${LAYOUT_VERSION}|${algorithm.name}|${params}`).digest('hex');
  return `${algorithm.name}:${hash.slice(0, 8)}`;
}

/**
 * redisKeyOf returns the Redis key of `key` under a policy: `${prefix}${policyId}:{${key}}`. The
 * user's key is the hash tag, so every policy's state for one key lives in one slot, and a
 * `consumeAll` over several policies for that key runs as one script. Keys that differ but should
 * share a slot can start with a common `{tag}`: Redis then hashes only up to its first `}`.
 */
export function redisKeyOf(prefix: string, policyId: string, key: string): string {
  return `${prefix}${policyId}:{${key}}`;
}

const CRC16_TABLE = ((): Uint16Array => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/**
 * hashSlotOf returns the Redis Cluster slot (0 to 16383) of a full Redis key: CRC16 (XMODEM) of
 * the UTF-8 bytes of its hash tag (the text between the first `{` and the next `}`, when not
 * empty) or of the whole key. It allocates nothing: the bytes are encoded as they are hashed.
 */
export function hashSlotOf(redisKey: string): number {
  // `{` and `}` are ASCII, and UTF-8 never uses their bytes inside another character, so the
  // positions found in the string mark the same tag as in the key's bytes.
  const open = redisKey.indexOf('{');
  if (open >= 0) {
    const close = redisKey.indexOf('}', open + 1);
    if (close > open + 1) return crc16OfUtf8(redisKey, open + 1, close) & 16383;
  }
  return crc16OfUtf8(redisKey, 0, redisKey.length) & 16383;
}

/**
 * Returns the CRC16 of the UTF-8 encoding of `text` from `start` to `end` (UTF-16 indexes), encoded
 * as `Buffer.from(text)` would: a surrogate pair as 4 bytes, a lone surrogate as U+FFFD.
 */
function crc16OfUtf8(text: string, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      crc = crcStep(crc, code);
      continue;
    }
    if (code < 0x800) {
      crc = crcStep(crcStep(crc, 0xc0 | (code >> 6)), 0x80 | (code & 0x3f));
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const low = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (code <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
        const point = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        crc = crcStep(crcStep(crc, 0xf0 | (point >> 18)), 0x80 | ((point >> 12) & 0x3f));
        crc = crcStep(crcStep(crc, 0x80 | ((point >> 6) & 0x3f)), 0x80 | (point & 0x3f));
        i++;
        continue;
      }
      code = 0xfffd;
    }
    crc = crcStep(crcStep(crcStep(crc, 0xe0 | (code >> 12)), 0x80 | ((code >> 6) & 0x3f)), 0x80 | (code & 0x3f));
  }
  return crc;
}

function crcStep(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >>> 8) ^ byte) & 0xff]!;
}
