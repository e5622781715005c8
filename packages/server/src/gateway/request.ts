/** The gateway's view of one request: what identities read, over node's HTTP/1.x or HTTP/2 request. */
import type { IncomingHttpHeaders } from 'node:http';
import { RequestView, type ClientIpResolver } from 'floodgate/http';
import type { ClientRequest } from './exchange.js';

/** ProxyRequest is one request as the gateway's rules see it: method, path, route, parameters and headers. */
export class ProxyRequest extends RequestView<ClientRequest> {
  /** The request's headers, read once: node's `headers` is a getter, which looks its object up on each read. */
  private readonly headers: IncomingHttpHeaders;

  constructor(
    raw: ClientRequest,
    resolver: ClientIpResolver,
    /** The matched route's name. */
    readonly routeName: string,
    /** The path parameters of the matched route, e.g. `{ id: '42' }`. */
    readonly params: Readonly<Record<string, string>>,
  ) {
    super(raw, resolver);
    this.headers = raw.headers;
  }

  /** The path without the query string (found when asked: most rules never read it). */
  get path(): string {
    const url = this.raw.url ?? '/';
    const q = url.indexOf('?');
    return q < 0 ? url : url.slice(0, q);
  }

  /** The query string without `?`, or '' when there is none. */
  get query(): string {
    const url = this.raw.url ?? '/';
    const q = url.indexOf('?');
    return q < 0 ? '' : url.slice(q + 1);
  }

  get method(): string {
    return this.raw.method ?? 'GET';
  }

  get route(): string {
    return this.routeName;
  }

  header(name: string): string | undefined {
    const value = this.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /**
   * hasHeader tells whether the request carries the named header. The client address's resolver
   * asks on every request whether the forwarding headers are there (to warn, once, that they are
   * ignored): those two are read by constant names, which a request's headers object answers from
   * its shape, where a name held in a variable is looked up in a shared cache, on every request.
   */
  override hasHeader(name: string): boolean {
    const headers = this.headers;
    if (name === 'x-forwarded-for') return headers['x-forwarded-for'] !== undefined;
    if (name === 'forwarded') return headers.forwarded !== undefined;
    return headers[name] !== undefined;
  }

  /**
   * repeatsHeader tells whether the request sends `name` (lower-case) in more than one field line
   * with different values: node joins them with `, ` into one value, which would then be counted
   * as a key of its own while the upstream may read either line.
   */
  repeatsHeader(name: string): boolean {
    const raw = this.raw.rawHeaders;
    let first: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]!.toLowerCase() !== name) continue;
      const value = raw[i + 1]!.trim();
      if (first === undefined) first = value;
      else if (value !== first) return true;
    }
    return false;
  }

  protected remoteAddress(): string | undefined {
    return this.raw.socket.remoteAddress;
  }
}
