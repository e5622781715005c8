/**
 * Headers between client and upstream: hop-by-hop fields removed (RFC 9110 section 7.6.1, with
 * every field the `Connection` header names), forwarding fields added (`X-Forwarded-For`,
 * `-Proto`, `-Host` and RFC 7239 `Forwarded`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { HeaderPair } from 'floodgate/http';
import { tree } from 'undici/lib/core/tree.js';

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
  /**
   * The `Forwarded` element {@link upstreamHeaders} made last for this hop, with the `Host` it
   * names: a connection's requests nearly always name one host, so its element is made once.
   */
  element?: { readonly host: string | undefined; readonly value: string } | undefined;
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
 * The request fields never copied upstream: the hop-by-hop ones, `Host` (left to the client
 * library: the upstream's own), `Expect` (answered by this hop, see Upstreams.forward) and the
 * forwarding fields, which {@link upstreamHeaders} writes itself.
 */
const NOT_COPIED = new Set([
  ...HOP_BY_HOP,
  'host',
  'expect',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
]);

/**
 * upstreamHeaders returns the request header fields to send upstream as a flat list (`[name,
 * value, name, value, ...]`, the form undici takes without building an object): end-to-end fields
 * only, `Host` left to the client library (the upstream's own), and the forwarding fields appended
 * to (when the peer is trusted) or started afresh (when it is not, so a client cannot forge them).
 */
export function upstreamHeaders(incoming: IncomingHttpHeaders, facts: ForwardingFacts): string[] {
  const drop = extraHopByHop(incoming.connection);
  const out: string[] = [];
  for (const name in incoming) {
    const value = incoming[name];
    // HTTP/2's pseudo-header fields are not passed on either (`:authority` has become `host`: see adoptAuthority).
    if (value === undefined || NOT_COPIED.has(name) || name.charCodeAt(0) === 58) continue;
    if (drop !== NOTHING_MORE && drop.has(name)) continue;
    if (typeof value === 'string') out.push(name, value);
    else for (const v of value) out.push(name, v);
  }
  const host = incoming.host;
  const priorFor = facts.trusted ? joined(incoming['x-forwarded-for']) : undefined;
  out.push('x-forwarded-for', priorFor === undefined ? facts.peer : `${priorFor}, ${facts.peer}`);
  out.push('x-forwarded-proto', (facts.trusted ? joined(incoming['x-forwarded-proto']) : undefined) ?? facts.proto);
  const forwardedHost = (facts.trusted ? joined(incoming['x-forwarded-host']) : undefined) ?? host;
  if (forwardedHost !== undefined) out.push('x-forwarded-host', forwardedHost);
  const last = facts.element;
  let element = last !== undefined && last.host === host ? last.value : undefined;
  if (element === undefined) facts.element = { host, value: (element = forwardedElement(facts, host)) };
  const priorForwarded = facts.trusted ? joined(incoming.forwarded) : undefined;
  out.push('forwarded', priorForwarded === undefined ? element : `${priorForwarded}, ${element}`);
  return out;
}

/**
 * downstreamHeaders returns the header fields of an upstream's answer as undici reads them (raw
 * names and values, in pairs) as node's flat list of strings for `writeHead`: without its
 * hop-by-hop fields, then `own`, the gateway's fields (its `RateLimit` fields), each replacing
 * the upstream's field of that name. Values are read byte for byte (latin1), so that they go out
 * as they came in.
 */
export function downstreamHeaders(raw: readonly (Buffer | string)[], own: readonly HeaderPair[]): string[] {
  const out: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = nameOf(raw[i]!);
    const value = latin1(raw[i + 1]!);
    if (name === 'connection') connection = connection === undefined ? value : `${connection}, ${value}`;
    else if (!HOP_BY_HOP.has(name) && !named(own, name)) out.push(name, value);
  }
  const drop = extraHopByHop(connection);
  const kept = drop === NOTHING_MORE ? out : withoutFields(out, drop);
  for (let i = 0; i < own.length; i++) kept.push(own[i]![0], own[i]![1]);
  return kept;
}

/** The flat field list `fields` without the fields called one of `names`. */
function withoutFields(fields: readonly string[], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < fields.length; i += 2) if (!names.has(fields[i]!)) out.push(fields[i]!, fields[i + 1]!);
  return out;
}

/** Whether `fields` has a field called `name`. */
function named(fields: readonly HeaderPair[], name: string): boolean {
  for (let i = 0; i < fields.length; i++) if (fields[i]![0] === name) return true;
  return false;
}

/**
 * The lower-case name of a field as undici reads it: a well-known name (nearly every field of an
 * answer) is found in undici's own table, with no string made from the bytes and folded per field.
 * The table's path is undici's, not a public API, as for the Pool (see undici-pool.ts).
 */
function nameOf(raw: Buffer | string): string {
  return (typeof raw === 'string' ? undefined : tree.lookup(raw)) ?? latin1(raw).toLowerCase();
}

function latin1(value: Buffer | string): string {
  return typeof value === 'string' ? value : value.toString('latin1');
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
