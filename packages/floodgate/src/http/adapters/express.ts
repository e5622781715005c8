/** The Express adapter (Express 4 and 5); Express is imported only as types. */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import type { IncomingMessage } from 'node:http';
import { consoleLogger } from '../logger.js';
import { NodeRequestView, runConnectStyle } from './node-request.js';
import { guardUpgrades, type UpgradeGuard } from './upgrade.js';

/**
 * floodgateExpress returns an Express middleware that sets the rate-limit headers and calls
 * `next()` when the request is admitted, and answers 429 (`application/problem+json`,
 * `Retry-After`) when it is refused. `raw` in identities is Express's `req`.
 *
 * The client address comes from the socket and floodgate's own `trustProxy` option; Express's
 * `trust proxy` setting is not consulted. Mounted on a route (`app.get('/a/:id', limit, handler)`)
 * {@link byRoute} sees the route pattern; mounted with `app.use` it sees the path.
 *
 * Upgrade requests (WebSocket) go to the server's `upgrade` listener, never through Express:
 * `server.on('upgrade', limit.upgrade(listener))` limits them with the same gate, with `raw`
 * being node's `IncomingMessage`.
 *
 * @example
 * const app = express();
 * app.use(floodgateExpress({ limiter: new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }) }), trustProxy: 1 }));
 */
export function floodgateExpress(options: HttpLimitOptions<Request>): RequestHandler & { readonly upgrade: UpgradeGuard } {
  const gate = new HttpGate(options);
  function floodgateExpressMiddleware(req: Request, res: Response, next: NextFunction): void {
    runConnectStyle(gate, new NodeRequestView(req, gate.clientIp, req, expressRoute), res, next);
  }
  // Express never sees an upgrade request: `raw` is node's own request, which Express's extends.
  const viewOf = (req: IncomingMessage): NodeRequestView<Request> => new NodeRequestView(req as Request, gate.clientIp, req, undefined);
  return Object.assign(floodgateExpressMiddleware, { upgrade: guardUpgrades(gate, options.logger ?? consoleLogger, viewOf) });
}

/** The matched route pattern under its mount point, when Express has matched one. */
function expressRoute(req: Request): string | undefined {
  const path: unknown = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? req.baseUrl + path : undefined;
}
