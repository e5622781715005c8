/** The node:http concurrency middleware, and event-loop pressure from node's own monitor. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { watchEventLoop, type EventLoopDelayOptions, type EventLoopPressure } from '../event-loop-pressure.js';
import { ConcurrencyGate, type ConcurrencyControl, type HttpConcurrencyOptions } from '../overload-gate.js';
import { admitConnectStyle } from './node-hold.js';
import { NodeRequestView, type NodeNext } from './node-request.js';

/** FloodgateConcurrencyNodeOptions are the options of every concurrency middleware, over node's `IncomingMessage`. */
export type FloodgateConcurrencyNodeOptions = HttpConcurrencyOptions<IncomingMessage>;

/** ConcurrencyNodeMiddleware is a Connect-style middleware over node's request and response, with its {@link ConcurrencyControl}. */
export type ConcurrencyNodeMiddleware = ((req: IncomingMessage, res: ServerResponse, next: NodeNext) => void) &
  ConcurrencyControl;

/**
 * floodgateConcurrencyNode returns a Connect-style middleware for node:http that holds at most
 * `limit` requests (fixed, or learned with `adaptive`) in its handlers at once. A request that
 * finds no slot waits in a bounded line (`maxQueue`, `maxWaitMs`; important tiers first) or is
 * answered at once, before any handler runs: 503 (or `statusCode` 429), `Retry-After` in whole
 * seconds (at least 1) and an `application/problem+json` body. An admitted request calls `next()`
 * and keeps its slot until its response closes: finished (a 429, 503 or 504 counts as a drop for
 * an adaptive limit, another 5xx says nothing, the rest is a latency sample), or the client left
 * (says nothing). A client that leaves while waiting gives up its place. `tierOf` errors go to `next(err)`.
 *
 * @example
 * const bulkhead = floodgateConcurrencyNode({ limit: 64, maxQueue: 128, maxWaitMs: 500 });
 * http.createServer((req, res) => bulkhead(req, res, (err) => (err ? fail(res, err) : handle(req, res)))).listen(8080);
 */
export function floodgateConcurrencyNode(options: FloodgateConcurrencyNodeOptions): ConcurrencyNodeMiddleware {
  const gate = new ConcurrencyGate<IncomingMessage>(options, monitorEventLoopDelay);
  function floodgateConcurrencyNodeMiddleware(req: IncomingMessage, res: ServerResponse, next: NodeNext): void {
    admitConnectStyle(
      gate,
      gate.readsRequest ? new NodeRequestView(req, gate.clientIp, req, undefined) : undefined,
      res,
      next,
    );
  }
  return Object.assign(floodgateConcurrencyNodeMiddleware, { limiter: gate.limiter, close: () => gate.close() });
}

/**
 * eventLoopPressure returns an {@link EventLoopPressure} over node's `monitorEventLoopDelay`, for a
 * `ConcurrencyLimiter` of your own: its `pressed` is true while this process's recent p99 or
 * mean event-loop delay is above `maxMs` (the middlewares' `eventLoopDelay` option does this for
 * the limiter they make). It samples every `resolutionMs` (default 10) on an unreferenced timer
 * until `close()`. Bad options throw `INVALID_OPTION` naming the option (`eventLoopPressure.maxMs`).
 *
 * @example
 * const pressure = eventLoopPressure({ maxMs: 50 });
 * const shared = new ConcurrencyLimiter({ adaptive: true, pressure: pressure.pressed });
 */
export function eventLoopPressure(options: EventLoopDelayOptions): EventLoopPressure {
  return watchEventLoop(monitorEventLoopDelay, options, 'eventLoopPressure');
}
