/** The Express concurrency middleware (Express 4 and 5); Express is imported only as types. */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ConcurrencyGate, type ConcurrencyControl, type HttpConcurrencyOptions } from '../overload-gate.js';
import { admitConnectStyle } from './node-hold.js';
import { NodeRequestView } from './node-request.js';
import { expressRoute } from './route-patterns.js';

/** FloodgateConcurrencyExpressOptions are the options of every concurrency middleware, over Express's `req`. */
export type FloodgateConcurrencyExpressOptions = HttpConcurrencyOptions<Request>;

/**
 * floodgateConcurrencyExpress returns an Express middleware that holds at most `limit` requests
 * (fixed, or learned with `adaptive`) in the handlers after it at once. A request that finds no
 * slot waits in a bounded line (`maxQueue`, `maxWaitMs`; important tiers first) or is answered at
 * once, before any handler runs: 503 (or `statusCode` 429), `Retry-After` in whole seconds and an
 * `application/problem+json` body. An admitted request keeps its slot until its response closes;
 * how it ended (status 429/503/504: a drop; another 5xx, or a client that left: nothing; else a
 * latency sample) feeds an adaptive limit. Errors thrown by later handlers reach Express's error
 * handler as usual and are seen here by the status it sends; a failing `tierOf` goes to `next(err)`.
 * `req.ip` in `tierOf` follows floodgate's `trustProxy`, not Express's `trust proxy` setting.
 *
 * Mount it where the work is: `app.use(...)` for the whole app, or on the routes a pool serves
 * (`app.post('/reports', bulkhead, report)`); pass one `limiter` to several to share their slots.
 *
 * @example
 * const app = express();
 * app.use(floodgateConcurrencyExpress({ adaptive: true, tiers: 2, tierOf: (req) => (req.path.startsWith('/admin') ? 0 : 1), maxQueue: 100 }));
 */
export function floodgateConcurrencyExpress(
  options: FloodgateConcurrencyExpressOptions,
): RequestHandler & ConcurrencyControl {
  const gate = new ConcurrencyGate<Request>(options, monitorEventLoopDelay);
  function floodgateConcurrencyExpressMiddleware(req: Request, res: Response, next: NextFunction): void {
    admitConnectStyle(
      gate,
      gate.readsRequest ? new NodeRequestView(req, gate.clientIp, req, expressRoute) : undefined,
      res,
      next,
    );
  }
  return Object.assign(floodgateConcurrencyExpressMiddleware, { limiter: gate.limiter, close: () => gate.close() });
}
