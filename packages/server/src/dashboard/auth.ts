/** The dashboard's access check: the admin token, as a bearer token or as the password of HTTP Basic. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** CHALLENGES are the `WWW-Authenticate` values of a refusal: Basic first, so a browser asks for it natively. */
export const CHALLENGES = ['Basic realm="floodgate dashboard", charset="UTF-8"', 'Bearer realm="floodgate-admin"'];

/**
 * authorizedByToken returns whether `req` carries the admin token whose SHA-256 is `digest`:
 * `Authorization: Bearer <token>`, or `Authorization: Basic` with the token as the password (any
 * user name). Digests of equal length are compared in constant time, so the comparison says
 * nothing of how much of a guess was right.
 *
 * @example
 * if (!authorizedByToken(req, tokenDigest(token))) refuse(res);
 */
export function authorizedByToken(req: IncomingMessage, digest: Buffer): boolean {
  const header = req.headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(header);
  if (bearer !== null) return matches(bearer[1]!.trim(), digest);
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic === null) return false;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 && matches(decoded.slice(colon + 1), digest);
}

function matches(token: string, digest: Buffer): boolean {
  return timingSafeEqual(createHash('sha256').update(token).digest(), digest);
}
