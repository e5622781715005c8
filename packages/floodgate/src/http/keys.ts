/**
 * Store keys for HTTP identities: namespaced by dimension so two dimensions never share state,
 * and bounded in length so odd input cannot grow memory without limit.
 */
import { createHash, createHmac } from 'node:crypto';
import { BoundedCache } from './cache.js';

/** DEFAULT_MAX_KEY_LENGTH is the default longest store key, in UTF-16 code units. */
export const DEFAULT_MAX_KEY_LENGTH = 256;
/** MIN_MAX_KEY_LENGTH is the smallest `maxKeyLength` allowed: room for a hashed key. */
export const MIN_MAX_KEY_LENGTH = 128;
/** Characters of a long identity kept readable in front of its hash. */
const READABLE_PREFIX = 48;
/** Identities whose keys each dimension remembers before its cache starts over. */
const KEY_CACHE_SIZE = 4096;

/**
 * storeKey returns the store key for `identity` (e.g. `ip:192.0.2.1`) under the dimension
 * `dimension`: `dimension/identity` when that fits in `maxKeyLength`, else
 * `dimension/#<sha256>:<first 48 characters>`.
 *
 * A key kept as is never has `#` after the dimension's `/` (identities beginning with `#` are
 * hashed too), so a hashed key cannot equal a short one; the hash covers every UTF-16 code unit, so distinct strings (even ones
 * with lone surrogates, which UTF-8 would merge) keep distinct keys.
 */
export function storeKey(dimension: string, identity: string, maxKeyLength: number): string {
  // An identity that itself begins with `#` (only a custom identity could) is hashed, never kept as is.
  if (dimension.length + 1 + identity.length <= maxKeyLength && identity[0] !== '#') return `${dimension}/${identity}`;
  const digest = createHash('sha256').update(Buffer.from(identity, 'utf16le')).digest('base64url');
  let prefix = identity.slice(0, READABLE_PREFIX);
  // Do not end the readable part on half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(prefix)) prefix = prefix.slice(0, -1);
  return `${dimension}/#${digest}:${prefix}`;
}

/** MIN_PARTITION_SECRET_BYTES is the shortest secret {@link partitionDigest} accepts, in bytes. */
export const MIN_PARTITION_SECRET_BYTES = 16;

/**
 * partitionDigest returns the first 16 bytes of HMAC-SHA-256 of `key` (its UTF-16 code units)
 * under `secret`: the opaque partition key (`pk`) the draft headers carry. Stable per client for
 * as long as the secret is, the same in every process that shares the secret, and without the
 * secret not recomputable, so a client's key (an IPv4 address, say) cannot be recovered by
 * trying candidates.
 *
 * @example
 * partitionDigest('default/ip:192.0.2.1', secret).toString('base64');
 */
export function partitionDigest(key: string, secret: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(Buffer.from(key, 'utf16le')).digest().subarray(0, 16);
}

/** StoreKeyEntry is a dimension's store key for one identity, with its partition key when on. */
export interface StoreKeyEntry {
  readonly key: string;
  /** The {@link partitionDigest} of `key` in base64, when partition keys are on. */
  readonly pk: string | undefined;
}

/**
 * StoreKeys gives one dimension's store keys, remembering those of recent identities (up to
 * 256 characters long): a repeat client reuses the same key string, which the store then finds
 * without hashing it again, and pays no HMAC for its partition key.
 */
export class StoreKeys {
  private readonly cache = new BoundedCache<StoreKeyEntry>(KEY_CACHE_SIZE);

  constructor(
    private readonly dimension: string,
    private readonly maxKeyLength: number,
    /** The partition-key secret; undefined when partition keys are off. */
    private readonly partitionSecret: Uint8Array | undefined,
  ) {}

  /** of returns the key entry for `identity`, as {@link storeKey} and {@link partitionDigest} give it. */
  of(identity: string): StoreKeyEntry {
    let entry = this.cache.get(identity);
    if (entry === undefined) {
      const key = storeKey(this.dimension, identity, this.maxKeyLength);
      entry = {
        key,
        pk:
          this.partitionSecret === undefined
            ? undefined
            : partitionDigest(key, this.partitionSecret).toString('base64'),
      };
      this.cache.set(identity, entry);
    }
    return entry;
  }
}
