/**
 * JSON Web Token claims for identities: read without verification, or verified as HS256 with a
 * configured secret (node:crypto, compared in constant time), with the reason a token is refused.
 * Only what keying needs; no other algorithm.
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
 * JwtProblem is why a presented token gives no identity: `malformed` (not three base64url JSON
 * parts, or `exp`/`nbf` not numbers), `algorithm` (`alg: none` always; with a secret, anything
 * but HS256), `signature` (does not verify with the secret), `expired` (`exp` passed),
 * `premature` (`nbf` still ahead) or `claim` (the claim is missing, empty or not a string or number).
 */
export type JwtProblem = 'malformed' | 'algorithm' | 'signature' | 'expired' | 'premature' | 'claim';

/** JwtRejection says why a token was not accepted. */
export interface JwtRejection {
  readonly problem: JwtProblem;
}

const REJECTIONS: Readonly<Record<JwtProblem, JwtRejection>> = Object.freeze({
  malformed: Object.freeze({ problem: 'malformed' }),
  algorithm: Object.freeze({ problem: 'algorithm' }),
  signature: Object.freeze({ problem: 'signature' }),
  expired: Object.freeze({ problem: 'expired' }),
  premature: Object.freeze({ problem: 'premature' }),
  claim: Object.freeze({ problem: 'claim' }),
});

/**
 * readJwtClaim returns the claim of a compact JWT as a string, or a {@link JwtRejection} saying why
 * there is none. A token with `alg: none` is always rejected; with a secret the token must be
 * HS256, verify, and be within its `nbf` and `exp` (times in seconds, compared with `nowMs`).
 * Without a secret the claim is read unverified (only behind something that verifies).
 */
export function readJwtClaim(token: string, options: JwtClaimOptions): string | JwtRejection {
  const parts = token.split('.');
  if (parts.length !== 3) return REJECTIONS.malformed;
  const [head, body, signature] = parts as [string, string, string];
  const header = decodeJson(head);
  if (header === undefined) return REJECTIONS.malformed;
  const alg = typeof header.alg === 'string' ? header.alg : '';
  if (alg.toLowerCase() === 'none' || (options.secret !== undefined && alg !== 'HS256')) return REJECTIONS.algorithm;
  if (options.secret !== undefined && !verified(head, body, signature, options.secret)) return REJECTIONS.signature;
  const payload = decodeJson(body);
  if (payload === undefined) return REJECTIONS.malformed;
  if (options.secret !== undefined) {
    const late = timeProblem(payload, options.nowMs);
    if (late !== undefined) return late;
  }
  const value = payload[options.claim];
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return REJECTIONS.claim;
}

/** The rejection of a verified payload outside its `nbf` to `exp` span, or undefined when within it. */
function timeProblem(payload: Record<string, unknown>, nowMs: number): JwtRejection | undefined {
  const { exp, nbf } = payload;
  if ((exp !== undefined && typeof exp !== 'number') || (nbf !== undefined && typeof nbf !== 'number'))
    return REJECTIONS.malformed;
  if (typeof exp === 'number' && exp * 1000 <= nowMs) return REJECTIONS.expired;
  if (typeof nbf === 'number' && nbf * 1000 > nowMs) return REJECTIONS.premature;
  return undefined;
}

function verified(head: string, body: string, signature: string, secret: string): boolean {
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
