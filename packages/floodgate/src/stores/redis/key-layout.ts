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
 * its hash tag (the bytes between the first `{` and the next `}`, when not empty) or of the key.
 */
export function hashSlotOf(redisKey: string): number {
  let bytes = Buffer.from(redisKey, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >>> 8) ^ byte) & 0xff]!;
  return crc & 16383;
}
