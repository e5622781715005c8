/** The Koa adapter (Koa 2 and 3); Koa is imported only as types. */
import type { Context, Middleware, Next } from 'koa';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import { isListField, stackedValue } from '../headers.js';
import type { RateLimitInfo, Verdict } from '../verdict.js';
import type { IncomingMessage } from 'node:http';
import { consoleLogger } from '../logger.js';
import { NodeRequestView, checkHandler, watchOutcome } from './node-request.js';
import { koaRoute } from './route-patterns.js';
import { guardUpgrades, type UpgradeGuard } from './upgrade.js';

export { floodgateConcurrencyKoa, type FloodgateConcurrencyKoaOptions } from './koa-concurrency.js';
export type { ConcurrencyControl, HttpConcurrencyOptions } from '../overload-gate.js';

/** KoaHandler answers a refused request itself: `ctx.status` is already the refusal's, the rate-limit headers set. */
export type KoaHandler = (ctx: Context, info: RateLimitInfo) => void | Promise<void>;

/** FloodgateKoaOptions are the options of every adapter, and `handler` (see {@link KoaHandler}). */
export interface FloodgateKoaOptions extends HttpLimitOptions<Context> {
  /** handler answers a refused request itself, e.g. `(ctx, info) => { ctx.body = 'slow down' }`; a 500 is still floodgate's. */
  handler?: KoaHandler;
}

declare module 'koa' {
  interface DefaultState {
    /** The rate-limit decision floodgate's middleware made for this request. */
    rateLimit?: RateLimitInfo;
  }
}

/**
 * floodgateKoa returns a Koa middleware that sets the rate-limit headers and goes on to `next()`
 * (returning its promise) when the request is admitted, and answers 429 (`application/problem+json`, `Retry-After`) when it is
 * refused. The decision is attached as `ctx.state.rateLimit` (a {@link RateLimitInfo}).
 * `raw` in identities is Koa's `ctx`; the route is koa-router's matched pattern when the
 * middleware runs inside the router, else the path.
 *
 * Upgrade requests (WebSocket) go to the server's `upgrade` listener, never through Koa:
 * `server.on('upgrade', limit.upgrade(listener))` limits them with the same gate, with `raw`
 * being node's `IncomingMessage`.
 *
 * @example
 * const app = new Koa();
 * app.use(floodgateKoa({ limiter: new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 5 }) }) }));
 */
export function floodgateKoa(options: FloodgateKoaOptions): Middleware & { readonly upgrade: UpgradeGuard } {
  const gate = new HttpGate(options);
  const handler = checkHandler(options.handler);
  // Koa makes no context for an upgrade request: `raw` is node's own request there.
  const viewOf = (req: IncomingMessage): NodeRequestView<Context> =>
    new NodeRequestView(req as unknown as Context, gate.clientIp, req, undefined);
  return Object.assign(floodgateKoaMiddleware, {
    upgrade: guardUpgrades(gate, options.logger ?? consoleLogger, viewOf),
  });

  // Not an async function: a synchronous verdict passes on `next()`'s own promise, one fewer per request.
  function floodgateKoaMiddleware(ctx: Context, next: Next): Promise<unknown> {
    const view = new NodeRequestView(ctx, gate.clientIp, ctx.req, koaRoute);
    let checked: Verdict | Promise<Verdict>;
    try {
      checked = gate.check(view);
    } catch (err) {
      return Promise.reject(err);
    }
    if (checked instanceof Promise) return checked.then((verdict) => apply(gate, verdict, view, ctx, next, handler));
    return apply(gate, checked, view, ctx, next, handler);
  }
}

/** Sets the verdict's headers, then answers a refusal or returns `next()`. */
function apply(
  gate: HttpGate<Context>,
  verdict: Verdict,
  view: NodeRequestView<Context>,
  ctx: Context,
  next: Next,
  handler: KoaHandler | undefined,
): Promise<unknown> {
  const res = ctx.res;
  (ctx.state as { rateLimit?: RateLimitInfo }).rateLimit = verdict;
  const custom = !verdict.allowed && handler !== undefined && verdict.statusCode !== 500;
  // What ctx.set does for string values, without its per-call arrays: nothing once headers are sent.
  if (!res.headersSent)
    for (const [name, value] of verdict.headers)
      if (!custom || name !== 'content-type')
        res.setHeader(name, isListField(name) ? stackedValue(value, res.getHeader(name)) : value);
  if (custom) {
    ctx.status = verdict.statusCode;
    return Promise.resolve(handler(ctx, verdict));
  }
  if (!verdict.allowed) {
    ctx.status = verdict.statusCode;
    ctx.body = verdict.body;
    return Promise.resolve();
  }
  watchOutcome(gate, verdict, res, view);
  return next();
}
