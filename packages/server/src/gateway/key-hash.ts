/**
 * Identity values hashed before they become store key names: an API key, a JWT subject or a query
 * token is a credential, and a Redis key name is read by every `SCAN`, `MONITOR`, slow log and
 * dashboard. The value is replaced by a keyed hash (HMAC-SHA-256 under the deployment's
 * `keys.secret`, truncated to 132 bits), the same in every gateway process and after restarts as
 * long as the secret is, so gateways sharing Redis agree on every key. The kind (`header:x-api-key:`)
 * stays readable; client addresses are kept as they are (see docs/gateway-operations.md).
 */
import { createHmac } from 'node:crypto';
import type { GatewayConfig, KeyConfig } from '../config/schema.js';

/** The HMAC key used when the config names no secret: the hash is then stable, but anyone can compute it. */
const UNKEYED = 'floodgate identity hash, no secret set';
/** Characters of the base64url digest kept: 22, or 132 bits. */
const DIGEST_CHARS = 22;
/** Values whose hash {@link valueHasher} remembers before it starts over, each of at most {@link RECENT_VALUE_CHARS} (about 2.5 MB in all). */
const RECENT_VALUES = 16_384;
const RECENT_VALUE_CHARS = 64;

/** KeyHashing is how a deployment's identity values become store keys: hashed (under `secret`, when set) or kept raw. */
export interface KeyHashing {
  readonly hash: boolean;
  readonly secret: string | undefined;
}

/** keyHashingOf returns the `keys` section's hashing, its secret read from `env` when named by `secretEnv`. */
export function keyHashingOf(keys: GatewayConfig['keys'], env: NodeJS.ProcessEnv): KeyHashing {
  return { hash: keys.hash, secret: keys.secretEnv === undefined ? keys.secret : env[keys.secretEnv] };
}

/**
 * identityHider returns what a rule's identities pass through before their store key is made: an
 * identity of the rule's own kind (`header:x-api-key:<value>`) comes back as
 * `header:x-api-key:#<digest>`; any other (the client address a rule falls back to) as it is.
 * Undefined when nothing is hidden: hashing off, or a key whose values are no secret (the client
 * address, a path parameter, the route).
 *
 * @example
 * const hide = identityHider({ type: 'header', name: 'x-api-key', onAbsent: 'fallback' }, { hash: true, secret });
 * hide?.('header:x-api-key:sk_live_123'); // 'header:x-api-key:#…'
 */
export function identityHider(key: KeyConfig, hashing: KeyHashing): ((identity: string) => string) | undefined {
  const kind = secretKind(key);
  if (!hashing.hash || kind === undefined) return undefined;
  const hmacKey = hashing.secret ?? UNKEYED;
  return (identity) =>
    identity.startsWith(kind)
      ? `${kind}#${createHmac('sha256', hmacKey).update(identity.slice(kind.length)).digest('base64url').slice(0, DIGEST_CHARS)}`
      : identity;
}

/**
 * valueHasher returns what the decision service's descriptor values become before they name a
 * store key or a metric label: `#<digest>` under the same keyed hash as the gateway's identities,
 * or undefined when hashing is off (`keys: { hash: false }`). The service cannot tell an API key
 * from an address by its descriptor key (`api_key`, `generic_key` are the config's own names), so
 * every value the config does not spell out is hashed.
 *
 * @example
 * valueHasher({ hash: true, secret })?.('secret-key-8564'); // '#…'
 */
export function valueHasher(hashing: KeyHashing): ((value: string) => string) | undefined {
  if (!hashing.hash) return undefined;
  const hmacKey = hashing.secret ?? UNKEYED;
  // An HMAC costs microseconds and the same values come back request after request (a user, a
  // route): the recent ones are remembered. Whether a value was seen lately is no secret here:
  // its key's remaining count says as much in every answer.
  const recent = new Map<string, string>();
  return (value) => {
    let hashed = recent.get(value);
    if (hashed === undefined) {
      hashed = `#${createHmac('sha256', hmacKey).update(value).digest('base64url').slice(0, DIGEST_CHARS)}`;
      if (value.length > RECENT_VALUE_CHARS) return hashed;
      if (recent.size >= RECENT_VALUES) recent.clear();
      recent.set(value, hashed);
    }
    return hashed;
  };
}

/** The identity prefix of a key whose values are credentials or user ids; undefined for the others. */
function secretKind(key: KeyConfig): string | undefined {
  switch (key.type) {
    case 'header':
      return `header:${key.name.toLowerCase()}:`;
    case 'jwt':
      return `jwt:${key.claim}:`;
    case 'query':
      return `query:${key.name}:`;
    default:
      return undefined;
  }
}
