/** The Express adapter (Express 4 and 5); Express is imported only as types. */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import type { RateLimitInfo } from '../verdict.js';
import type { IncomingMessage } from 'node:http';
import { FloodgateError } from '../../core/errors.js';
import type { TrustProxyOptions } from '../client-ip.js';
import { consoleLogger, type Logger } from '../logger.js';
import { trustSourceOf, type TrustSource } from './express-trust.js';
import { NodeRequestView, checkHandler, runConnectStyle, type ConnectHandler } from './node-request.js';
import type { ServerResponse } from 'node:http';
import { expressRoute } from './route-patterns.js';
import { guardUpgrades, type UpgradeGuard } from './upgrade.js';

export { floodgateConcurrencyExpress, type FloodgateConcurrencyExpressOptions } from './express-concurrency.js';
export type { ConcurrencyControl, HttpConcurrencyOptions } from '../overload-gate.js';

/** FloodgateExpressOptions are the options of every adapter, and Express's `handler`. */
export interface FloodgateExpressOptions extends HttpLimitOptions<Request> {
  /**
   * handler answers a refused request itself (as express-rate-limit's `handler` does), e.g.
   * `(req, res, next, info) => res.status(429).render('slow-down')`. The rate-limit headers and
   * `Retry-After` are already set; `info` has the decisions and the status floodgate would send.
   * A 500 (an option function failed) is still answered by floodgate.
   */
  handler?: (req: Request, res: Response, next: NextFunction, info: RateLimitInfo) => void;
}

declare global {
  // Express's own way to add to its request type (as express-rate-limit does).
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The rate-limit decision floodgate's middleware made for this request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

/**
 * floodgateExpress returns an Express middleware that sets the rate-limit headers and calls
 * `next()` when the request is admitted, and answers 429 (`application/problem+json`,
 * `Retry-After`) when it is refused. `raw` in identities is Express's `req`. The decision is attached as `req.rateLimit` (a
 * {@link RateLimitInfo}) for the handlers after it.
 *
 * The client address honours Express's `trust proxy` setting: when the app trusts proxies
 * (`app.set('trust proxy', 1)`) and floodgate's `trustProxy` is not given, `ip` is Express's own
 * `req.ip`. When the app trusts none, floodgate's `trustProxy` decides. When both are given they
 * must agree (same hop count or same list), else every request fails with an `INVALID_OPTION`
 * error naming both (passed to `next(err)`, logged once). Mounted on a route (`app.get('/a/:id', limit, handler)`)
 * {@link http!byRoute} sees the route pattern; mounted with `app.use` it sees the path.
 *
 * Upgrade requests (WebSocket) go to the server's `upgrade` listener, never through Express:
 * `server.on('upgrade', limit.upgrade(listener))` limits them with the same gate, with `raw`
 * being node's `IncomingMessage`.
 *
 * @example
 * const app = express();
 * app.use(floodgateExpress({ limiter: new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }) }), trustProxy: 1 }));
 */
export function floodgateExpress(
  options: FloodgateExpressOptions,
): RequestHandler & { readonly upgrade: UpgradeGuard } {
  const gate = new HttpGate(options);
  const handler = checkHandler(options.handler);
  const logger = options.logger ?? consoleLogger;
  const sources = new WeakMap<object, TrustSource>();
  function floodgateExpressMiddleware(req: Request, res: Response, next: NextFunction): void {
    const source = sourceFor(req, sources, options, logger);
    if (source instanceof FloodgateError) {
      next(source);
      return;
    }
    const view =
      source === 'express'
        ? new ExpressIpView(req, gate.clientIp, req, expressRoute)
        : new NodeRequestView(req, gate.clientIp, req, expressRoute);
    runConnectStyle(gate, view, res, next, handler as ConnectHandler<Request, ServerResponse> | undefined);
  }
  // Express never sees an upgrade request: `raw` is node's own request, which Express's extends.
  const viewOf = (req: IncomingMessage): NodeRequestView<Request> =>
    new NodeRequestView(req as Request, gate.clientIp, req, undefined);
  return Object.assign(floodgateExpressMiddleware, {
    upgrade: guardUpgrades(gate, options.logger ?? consoleLogger, viewOf),
  });
}

/** Who finds the client address of `req`'s app, decided at the app's first request; a disagreement is logged once. */
function sourceFor(
  req: Request,
  sources: WeakMap<object, TrustSource>,
  options: TrustProxyOptions,
  logger: Logger,
): TrustSource {
  const app = (req.app as object | undefined) ?? FALLBACK_APP;
  let source = sources.get(app);
  if (source === undefined) {
    const setting: unknown = typeof req.app?.get === 'function' ? req.app.get('trust proxy') : undefined;
    source = trustSourceOf(setting, options);
    if (source instanceof FloodgateError) logger.warn(`floodgate: ${source.message}`);
    sources.set(app, source);
  }
  return source;
}

/** Stands for the app of a request that has none (the middleware called outside Express). */
const FALLBACK_APP = {};

/** The request view whose `ip` is Express's `req.ip`, in floodgate's canonical form. */
class ExpressIpView extends NodeRequestView<Request> {
  private expressIp: string | undefined;

  override get ip(): string {
    if (this.expressIp === undefined) this.expressIp = this.canonical(this.raw.ip);
    return this.expressIp;
  }
}
