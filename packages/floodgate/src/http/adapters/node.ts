/** The node:http adapter: a Connect-style middleware for plain `http.createServer` (and Connect, Polka). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import { consoleLogger } from '../logger.js';
import { NodeRequestView, checkHandler, runConnectStyle, type ConnectHandler, type NodeNext } from './node-request.js';
import { guardUpgrades, type UpgradeGuard } from './upgrade.js';

export { floodgateUpgrade, type UpgradeGuard, type UpgradeListener } from './upgrade.js';
export type { ConnectHandler, NodeNext, WithRateLimit } from './node-request.js';

export {
  eventLoopPressure,
  floodgateConcurrencyNode,
  type ConcurrencyNodeMiddleware,
  type FloodgateConcurrencyNodeOptions,
} from './node-concurrency.js';
export type { EventLoopDelayOptions, EventLoopPressure } from '../event-loop-pressure.js';
export type { ConcurrencyControl, HttpConcurrencyOptions } from '../overload-gate.js';

/** FloodgateNodeOptions are the options of every adapter, and `handler`, which answers a refusal itself (see {@link ConnectHandler}). */
export interface FloodgateNodeOptions extends HttpLimitOptions<IncomingMessage> {
  handler?: ConnectHandler<IncomingMessage, ServerResponse>;
}

/**
 * NodeMiddleware is a Connect-style middleware over node's own request and response; its
 * `upgrade` guards the server's `upgrade` listener with the same gate (see {@link UpgradeGuard}).
 */
export type NodeMiddleware = ((req: IncomingMessage, res: ServerResponse, next: NodeNext) => void) & {
  readonly upgrade: UpgradeGuard;
};

/**
 * floodgateNode returns a Connect-style middleware for node:http: it sets the rate-limit headers
 * and calls `next()` when the request is admitted, and answers 429 (`application/problem+json`,
 * `Retry-After`) itself when it is refused; errors go to `next(err)`. `raw` in identities is the
 * `IncomingMessage`; the route is the path, since node:http has no router. The decision is
 * attached as `req.rateLimit` (a `RateLimitInfo`; type the request as `IncomingMessage & WithRateLimit`).
 *
 * A server with an `upgrade` listener hands upgrade requests (WebSocket) to it, not to this
 * middleware: wrap the listener with `limit.upgrade(listener)` so that they are limited too.
 * HEAD requests are limited like any other; CORS preflights too, unless `exemptPreflight` is set.
 *
 * @example
 * const limit = floodgateNode({ limiter: new Limiter({ policy: tokenBucket({ capacity: 20, refillPerSecond: 5 }) }) });
 * http.createServer((req, res) => limit(req, res, (err) => (err ? fail(res, err) : handle(req, res)))).listen(8080);
 */
export function floodgateNode(options: FloodgateNodeOptions): NodeMiddleware {
  const gate = new HttpGate(options);
  const handler = checkHandler(options.handler);
  const viewOf = (req: IncomingMessage): NodeRequestView<IncomingMessage> =>
    new NodeRequestView(req, gate.clientIp, req, undefined);
  function floodgateNodeMiddleware(req: IncomingMessage, res: ServerResponse, next: NodeNext): void {
    runConnectStyle(gate, viewOf(req), res, next, handler);
  }
  return Object.assign(floodgateNodeMiddleware, {
    upgrade: guardUpgrades(gate, options.logger ?? consoleLogger, viewOf),
  });
}
