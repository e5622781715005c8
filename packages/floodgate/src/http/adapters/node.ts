/** The node:http adapter: a Connect-style middleware for plain `http.createServer` (and Connect, Polka). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import { NodeRequestView, runConnectStyle, type NodeNext } from './node-request.js';

/** NodeMiddleware is a Connect-style middleware over node's own request and response. */
export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: NodeNext) => void;

/**
 * floodgateNode returns a Connect-style middleware for node:http: it sets the rate-limit headers
 * and calls `next()` when the request is admitted, and answers 429 (`application/problem+json`,
 * `Retry-After`) itself when it is refused; errors go to `next(err)`. `raw` in identities is the
 * `IncomingMessage`; the route is the path, since node:http has no router.
 *
 * @example
 * const limit = floodgateNode({ limiter: new Limiter({ policy: tokenBucket({ capacity: 20, refillPerSecond: 5 }) }) });
 * http.createServer((req, res) => limit(req, res, (err) => (err ? fail(res, err) : handle(req, res)))).listen(8080);
 */
export function floodgateNode(options: HttpLimitOptions<IncomingMessage>): NodeMiddleware {
  const gate = new HttpGate(options);
  return function floodgateNodeMiddleware(req, res, next) {
    runConnectStyle(gate, new NodeRequestView(req, gate.clientIp, req, undefined), res, next);
  };
}
