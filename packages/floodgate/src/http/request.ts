/**
 * The framework-neutral view of a request that identities, skips and costs read, and the small
 * types shared by the handler and the adapters.
 */
import type { ClientIpResolver } from './client-ip.js';

/**
 * HttpRequest is what floodgate sees of a request, whatever the framework: the one view every
 * identity (`key`), `cost`, `skip`, limiter chooser and `refundWhen` receives on every adapter, so
 * one function serves them all. It has `method`, `path`, `route`, `ip` and `header(name)`; `raw`
 * reaches the framework's own object when a function needs more: node's `IncomingMessage`,
 * Express's `req`, Fastify's `request`, Koa's `ctx` or Hono's `Context` (node's `IncomingMessage`
 * for upgrade requests, which no framework sees).
 *
 * @example
 * // The same identity on Express, Fastify, Koa, Hono and node:http.
 * const byTenant: Identity = (req) => (req.header('x-tenant') ? `tenant:${req.header('x-tenant')}` : undefined);
 */
export interface HttpRequest<Req = unknown> {
  /** The framework's own request (or context) object. */
  readonly raw: Req;
  /** The method in upper case, e.g. `GET`. */
  readonly method: string;
  /** The path the client asked for, without the query string (`/users/42`), before any mount point is stripped. */
  readonly path: string;
  /**
   * The route pattern when the framework knows it at this point (`/users/:id`), else the path
   * without its query string.
   */
  readonly route: string;
  /**
   * The client's address in canonical form (`192.0.2.1`, `2001:db8::1`), resolved from the socket
   * and, only when trusted, `X-Forwarded-For` or `Forwarded`; a trusted proxy's obfuscated
   * identifier (`_hidden`) as written; `unknown` when there is none.
   */
  readonly ip: string;
  /** header returns the value of the named request header (name in lower case), or undefined. */
  header(name: string): string | undefined;
}

/**
 * RequestView is the base of each adapter's {@link HttpRequest}: it resolves `ip` on first use
 * and remembers it, so a request that no identity keys by IP never parses forwarding headers.
 */
export abstract class RequestView<Req> implements HttpRequest<Req> {
  private clientIp: string | undefined;

  constructor(
    readonly raw: Req,
    private readonly resolver: ClientIpResolver,
  ) {}

  abstract get method(): string;
  abstract readonly path: string;
  abstract get route(): string;
  abstract header(name: string): string | undefined;

  /**
   * hasHeader tells whether the request carries the named header (name in lower case). Adapters
   * override it where presence is cheaper to learn than the value.
   */
  hasHeader(name: string): boolean {
    return this.header(name) !== undefined;
  }
  /** canonical returns an address the framework resolved itself in the canonical form `ip` has. */
  protected canonical(address: string | undefined): string {
    return this.resolver.canonicalize(address);
  }

  /** remoteAddress returns the socket's peer address as the runtime reports it. */
  protected abstract remoteAddress(): string | undefined;

  get ip(): string {
    if (this.clientIp === undefined) this.clientIp = this.resolver.resolve(this.remoteAddress(), this);
    return this.clientIp;
  }
}

/** Outcome is how an admitted request ended, as given to the `refundWhen` option. */
export interface Outcome {
  /** The response status sent (500 when the handler threw and the framework answered for it). */
  readonly statusCode: number;
  /** False when the connection closed before the response was complete. */
  readonly completed: boolean;
}
