/**
 * Headers between client and upstream: hop-by-hop fields removed (RFC 9110 section 7.6.1, with
 * every field the `Connection` header names), forwarding fields added (`X-Forwarded-For`,
 * `-Proto`, `-Host` and RFC 7239 `Forwarded`).
 */
import type { IncomingHttpHeaders } from 'node:http';

/** The hop-by-hop fields a proxy never forwards (RFC 9110 section 7.6.1, and the obsolete ones still seen). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** ForwardingFacts is what the gateway knows of the hop it received a request on. */
export interface ForwardingFacts {
  /** The socket's peer address. */
  readonly peer: string;
  /** `http` or `https`, as the gateway received it. */
  readonly proto: string;
  /** Whether the peer is a trusted proxy whose forwarding fields are kept and appended to. */
  readonly trusted: boolean;
}

/** connectionNames returns the field names a `Connection` header lists, in lower case: hop-by-hop fields of that message. */
export function connectionNames(connection: string | string[] | undefined): string[] {
  if (connection === undefined) return [];
  const text = Array.isArray(connection) ? connection.join(',') : connection;
  return text
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
}

/** No field names: what a `Connection` header of only hop-by-hop options leaves to drop besides them. */
const NOTHING_MORE: ReadonlySet<string> = new Set();

/**
 * extraHopByHop returns the fields a `Connection` header names, beyond the hop-by-hop fields dropped
 * anyway. The usual values (none, `keep-alive`, `close`) need no parsing and make no set: this runs
 * for every request and every response.
 */
function extraHopByHop(connection: string | string[] | undefined): ReadonlySet<string> {
  if (
    connection === undefined ||
    connection === 'keep-alive' ||
    connection === 'close' ||
    connection === 'Keep-Alive' ||
    connection === 'Close'
  )
    return NOTHING_MORE;
  return new Set(connectionNames(connection));
}

/**
 * upstreamHeaders returns the request headers to send upstream: end-to-end fields only, `Host`
 * left to the client library (the upstream's own), and the forwarding fields appended (when the
 * peer is trusted) or started afresh (when it is not, so a client cannot forge them).
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  facts: ForwardingFacts,
): Record<string, string | string[]> {
  const drop = extraHopByHop(incoming.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    const value = incoming[name];
    // `Expect: 100-continue` is answered by this hop (see Upstreams.forward), not passed on; nor
    // are HTTP/2's pseudo-header fields (`:authority` has become `host`: see adoptAuthority).
    if (value === undefined || name === 'host' || name === 'expect' || name.charCodeAt(0) === 58) continue;
    if (HOP_BY_HOP.has(name) || drop.has(name)) continue;
    out[name] = value;
  }
  const host = incoming.host;
  const priorFor = facts.trusted ? joined(incoming['x-forwarded-for']) : undefined;
  out['x-forwarded-for'] = priorFor === undefined ? facts.peer : `${priorFor}, ${facts.peer}`;
  out['x-forwarded-proto'] = (facts.trusted ? joined(incoming['x-forwarded-proto']) : undefined) ?? facts.proto;
  const forwardedHost = (facts.trusted ? joined(incoming['x-forwarded-host']) : undefined) ?? host;
  if (forwardedHost !== undefined) out['x-forwarded-host'] = forwardedHost;
  else delete out['x-forwarded-host'];
  const element = forwardedElement(facts, host);
  const priorForwarded = facts.trusted ? joined(incoming.forwarded) : undefined;
  out.forwarded = priorForwarded === undefined ? element : `${priorForwarded}, ${element}`;
  return out;
}

/** downstreamHeaders returns an upstream response's headers without its hop-by-hop fields. */
export function downstreamHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const drop = extraHopByHop(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || drop.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** One RFC 7239 element for this hop: `for=...;host=...;proto=...`, IPv6 quoted and bracketed. */
function forwardedElement(facts: ForwardingFacts, host: string | undefined): string {
  const peer = facts.peer.includes(':') ? `"[${facts.peer}]"` : facts.peer;
  let element = `for=${peer}`;
  if (host !== undefined && /^[A-Za-z0-9.\-:[\]]+$/.test(host))
    element += `;host=${host.includes(':') ? `"${host}"` : host}`;
  return `${element};proto=${facts.proto}`;
}

function joined(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}
