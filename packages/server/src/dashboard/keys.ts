/** How the dashboard shows a key: in full, truncated, or as a keyed hash that never reveals it. */
import { createHmac, randomBytes } from 'node:crypto';

/** KeyDisplay names how keys are shown: `full`, `truncate` (the first 24 characters) or `hash`. */
export type KeyDisplay = 'full' | 'truncate' | 'hash';

/** Characters kept by `truncate`. */
const TRUNCATE_AT = 24;

/**
 * keyShower returns the function the dashboard shows each key through. It first drops the rule's
 * own prefix (`route/rule/`) from a store key. `hash` shows the first 12 characters (72 bits) of
 * an HMAC-SHA-256 of the key under `secret` (default: 32 random bytes made once per call), so one
 * client reads the same within a process but its key (an IPv4 address, say) cannot be recovered
 * by hashing candidates without the secret.
 *
 * @example
 * const show = keyShower('truncate');
 * show('api/per-ip/ip:192.0.2.1', 'api', 'per-ip'); // 'ip:192.0.2.1'
 */
export function keyShower(
  display: KeyDisplay,
  secret: Uint8Array = randomBytes(32),
): (key: string, route: string, rule: string) => string {
  return (key, route, rule) => {
    const prefix = `${route}/${rule}/`;
    const bare = key.startsWith(prefix) ? key.slice(prefix.length) : key;
    if (display === 'full') return bare;
    if (display === 'truncate')
      return bare.length <= TRUNCATE_AT ? bare : `${bare.slice(0, TRUNCATE_AT).replace(/[\uD800-\uDBFF]$/, '')}…`;
    return `#${createHmac('sha256', secret).update(bare).digest('base64url').slice(0, 12)}`;
  };
}
