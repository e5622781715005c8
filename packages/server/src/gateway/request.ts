/** The gateway's view of one request: what identities read, over node's HTTP/1.x or HTTP/2 request. */
import { RequestView, type ClientIpResolver } from 'floodgate/http';
import type { ClientRequest } from './exchange.js';

/** ProxyRequest is one request as the gateway's rules see it: method, path, route, parameters and headers. */
export class ProxyRequest extends RequestView<ClientRequest> {
  constructor(
    raw: ClientRequest,
    resolver: ClientIpResolver,
    /** The matched route's name. */
    readonly routeName: string,
    /** The path parameters of the matched route, e.g. `{ id: '42' }`. */
    readonly params: Readonly<Record<string, string>>,
  ) {
    super(raw, resolver);
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
    const value = this.raw.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  }

  protected remoteAddress(): string | undefined {
    return this.raw.socket.remoteAddress;
  }
}
