/**
 * JSON Web Token claims for identities: read without verification, or verified as HS256 with a
 * configured secret (node:crypto, compared in constant time). Only what keying needs; no other algorithm.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** JwtClaimOptions says how {@link jwtClaim} reads a token. */
export interface JwtClaimOptions {
  /** The claim to read, e.g. `sub`. */
  readonly claim: string;
  /** The HS256 secret; undefined reads the claim unverified (only behind something that verifies). */
  readonly secret: string | undefined;
  /** The current time in ms, to refuse expired verified tokens. */
  readonly nowMs: number;
}

/**
 * jwtClaim returns the claim of a compact JWT as a string, or undefined when the token is
 * malformed, lacks the claim, or (with a secret) is not HS256, fails its signature or has expired.
 */
export function jwtClaim(token: string, options: JwtClaimOptions): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [head, body, signature] = parts as [string, string, string];
  if (options.secret !== undefined && !verified(head, body, signature, options.secret)) return undefined;
  const payload = decodeJson(body);
  if (payload === undefined) return undefined;
  if (options.secret !== undefined && typeof payload.exp === 'number' && payload.exp * 1000 <= options.nowMs)
    return undefined;
  const value = payload[options.claim];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function verified(head: string, body: string, signature: string, secret: string): boolean {
  const header = decodeJson(head);
  if (header === undefined || header.alg !== 'HS256') return false;
  const expected = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  const given = Buffer.from(signature, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** signHs256 returns a compact HS256 JWT of `payload` (for tests and examples). */
export function signHs256(payload: Record<string, unknown>, secret: string): string {
  const head = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${signature}`;
}
