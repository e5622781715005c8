/**
 * What the Hono adapters share: the request view over a Hono context, and the node request and
 * response @hono/node-server passes, when it does. Hono is imported only as types.
 */
import type { Context } from 'hono';
import type { ClientIpResolver } from '../client-ip.js';
import { RequestView } from '../request.js';
import { hasRawHeader } from './node-request.js';

/** FetchRequestView is the request view over a Hono context and its fetch `Request`. */
export class FetchRequestView extends RequestView<Context> {
  constructor(
    c: Context,
    resolver: ClientIpResolver,
    private readonly address: (c: Context) => string | undefined,
  ) {
    super(c, resolver);
  }

  get method(): string {
    return this.raw.req.method;
  }

  get path(): string {
    return this.raw.req.path;
  }

  get route(): string {
    const routes = this.raw.req.matchedRoutes;
    // The last route matched is the handler's; ones registered with `*` or `/*` are middleware.
    for (let i = routes.length - 1; i >= 0; i--) {
      const path = routes[i]!.path;
      if (!path.endsWith('*')) return path;
    }
    return this.raw.req.path;
  }

  header(name: string): string | undefined {
    // Under @hono/node-server, node's own parsed headers (names in lower case): a plain property
    // read, where the fetch Headers would validate and lower-case the name on every lookup.
    const headers = nodeServerOf(this.raw)?.incoming?.headers;
    if (headers !== undefined) {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    }
    return this.raw.req.raw.headers.get(name) ?? undefined;
  }

  /** Under @hono/node-server, from node's raw header list, which costs less than building its header object. */
  override hasHeader(name: string): boolean {
    const raw = nodeServerOf(this.raw)?.incoming?.rawHeaders;
    return raw !== undefined ? hasRawHeader(raw, name) : this.raw.req.raw.headers.has(name);
  }

  protected remoteAddress(): string | undefined {
    return this.address(this.raw);
  }
}

/** statusOf returns the status of the response the app gave (500 when its handler threw). */
export function statusOf(c: Context): number {
  return c.error === undefined ? c.res.status : 500;
}

/** NodeServerEnv is the node request and response @hono/node-server passes as `env` (or `env.server`), if any. */
export interface NodeServerEnv {
  incoming?: {
    socket?: { remoteAddress?: string };
    headers?: Record<string, string | string[] | undefined>;
    rawHeaders?: string[];
  };
  outgoing?: {
    headersSent?: boolean;
    writableFinished?: boolean;
    /** True once node's response closed (finished, or the connection dropped). */
    closed?: boolean;
    setHeader?: (name: string, value: string) => unknown;
    getHeader?: (name: string) => unknown;
    once?: (event: 'close', listener: () => void) => unknown;
  };
}

/** nodeServerOf returns what @hono/node-server passes of node's request and response, or undefined on other runtimes. */
export function nodeServerOf(c: Context): NodeServerEnv | undefined {
  const env = c.env as (NodeServerEnv & { server?: NodeServerEnv }) | undefined;
  return env?.server ?? env;
}

/** nodeServerAddress returns the peer address under @hono/node-server, which passes node's request as `env.incoming`. */
export function nodeServerAddress(c: Context): string | undefined {
  return nodeServerOf(c)?.incoming?.socket?.remoteAddress;
}
