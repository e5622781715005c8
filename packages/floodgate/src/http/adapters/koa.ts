/** The Koa adapter (Koa 2 and 3); Koa is imported only as types. */
import type { Context, Middleware, Next } from 'koa';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import type { Verdict } from '../verdict.js';
import { NodeRequestView, watchOutcome } from './node-request.js';

/**
 * floodgateKoa returns a Koa middleware that sets the rate-limit headers and awaits `next()` when
 * the request is admitted, and answers 429 (`application/problem+json`, `Retry-After`) when it is
 * refused. `raw` in identities is Koa's `ctx`; the route is koa-router's matched pattern when the
 * middleware runs inside the router, else the path.
 *
 * @example
 * const app = new Koa();
 * app.use(floodgateKoa({ limiter: new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 5 }) }) }));
 */
export function floodgateKoa(options: HttpLimitOptions<Context>): Middleware {
  const gate = new HttpGate(options);
  return async function floodgateKoaMiddleware(ctx: Context, next: Next): Promise<void> {
    const view = new NodeRequestView(ctx, gate.clientIp, ctx.req, koaRoute);
    const checked = gate.check(view);
    const verdict: Verdict = checked instanceof Promise ? await checked : checked;
    for (const [name, value] of verdict.headers) ctx.set(name, value);
    if (!verdict.allowed) {
      ctx.status = verdict.statusCode;
      ctx.body = verdict.body;
      return;
    }
    watchOutcome(gate, verdict, ctx.res, view);
    await next();
  };
}

/** koa-router's matched pattern, when the middleware runs inside the router. */
function koaRoute(ctx: Context): string | undefined {
  const route: unknown = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}
