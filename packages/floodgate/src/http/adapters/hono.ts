/**
 * The Hono adapter: fetch-style `Request`/`Response`, so it serves every runtime Hono runs on
 * (node through @hono/node-server, Bun, Deno, workers). Hono is imported only as types.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import { RequestView } from '../request.js';
import type { ClientIpResolver } from '../client-ip.js';
import type { Verdict } from '../verdict.js';

/** FloodgateHonoOptions adds how to find the client's address, which depends on the runtime. */
export interface FloodgateHonoOptions extends HttpLimitOptions<Context> {
  /**
   * remoteAddress returns the socket peer's address. The default reads @hono/node-server's
   * `c.env.incoming`; on other runtimes pass the runtime's helper, e.g. Hono's `getConnInfo(c).remote.address`.
   */
  remoteAddress?: (c: Context) => string | undefined;
}

/**
 * floodgateHono returns a Hono middleware that sets the rate-limit headers and awaits `next()` when
 * the request is admitted, and returns a 429 `Response` (`application/problem+json`, `Retry-After`)
 * when it is refused. `raw` in identities is Hono's `Context`; the route is the matched pattern.
 * With `refundWhen`, the outcome is read from `c.res` after the handler (500 when it threw).
 *
 * @example
 * const app = new Hono();
 * app.use('*', floodgateHono({ limiter: new Limiter({ policy: slidingWindowLog({ limit: 60, windowMs: 60_000 }) }) }));
 */
export function floodgateHono(options: FloodgateHonoOptions): MiddlewareHandler {
  const gate = new HttpGate<Context>(options);
  const remoteAddress = options.remoteAddress ?? nodeServerAddress;
  return async function floodgateHonoMiddleware(c, next) {
    const view = new FetchRequestView(c, gate.clientIp, remoteAddress);
    const checked = gate.check(view);
    const verdict: Verdict = checked instanceof Promise ? await checked : checked;
    if (!verdict.allowed) return new Response(verdict.body, { status: verdict.statusCode, headers: verdict.headers as [string, string][] });
    for (const [name, value] of verdict.headers) c.header(name, value);
    await next();
    if (verdict.charges !== undefined) gate.settle(verdict, { statusCode: c.error === undefined ? c.res.status : 500, completed: true }, view);
  };
}

/** FetchRequestView is the request view over a Hono context and its fetch `Request`. */
class FetchRequestView extends RequestView<Context> {
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
    return this.raw.req.raw.headers.get(name) ?? undefined;
  }

  protected remoteAddress(): string | undefined {
    return this.address(this.raw);
  }
}

/** The peer address under @hono/node-server, which passes node's request as `env.incoming`. */
function nodeServerAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } }; server?: { incoming?: { socket?: { remoteAddress?: string } } } } | undefined;
  return (env?.server ?? env)?.incoming?.socket?.remoteAddress;
}
