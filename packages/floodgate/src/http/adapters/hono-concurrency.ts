/**
 * The Hono concurrency middleware: fetch-style, for every runtime Hono runs on. Hono is imported
 * only as types, and node's modules not at all: `eventLoopDelay` finds node's monitor at run time.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Admission } from '../../overload/concurrency-limiter.js';
import { CallHold } from '../call-hold.js';
import type { DelayMonitor } from '../event-loop-pressure.js';
import { ConcurrencyGate, type ConcurrencyControl, type HttpConcurrencyOptions } from '../overload-gate.js';
import { FetchRequestView, nodeServerAddress, nodeServerOf, statusOf } from './fetch-request.js';

/** FloodgateConcurrencyHonoOptions are the options of every concurrency middleware, over Hono's `Context`, and how to find the client's address. */
export interface FloodgateConcurrencyHonoOptions extends HttpConcurrencyOptions<Context> {
  /** remoteAddress returns the socket peer's address for `req.ip` in `tierOf` (default: @hono/node-server's socket). */
  remoteAddress?: (c: Context) => string | undefined;
}

/**
 * floodgateConcurrencyHono returns a Hono middleware that holds at most `limit` requests (fixed,
 * or learned with `adaptive`) in the handlers after it at once. A request that finds no slot
 * waits in a bounded line (`maxQueue`, `maxWaitMs`; important tiers first; the request's `signal`
 * ends the wait when the client leaves) or gets, without running `next()`, a 503 (or `statusCode`
 * 429) `Response` with `Retry-After` in whole seconds and an `application/problem+json` body.
 * An admitted request keeps its slot until node's response closes under @hono/node-server (the
 * body written, or the client gone), elsewhere until `next()` returns; a thrown timeout (`c.error`)
 * or a 429/503/504 response is a drop for an adaptive limit, another error or a client that left
 * says nothing, the rest is a latency sample. `eventLoopDelay` needs `process.getBuiltinModule`
 * (node 20.16 and later); elsewhere it is refused with `INVALID_OPTION`.
 *
 * @example
 * const app = new Hono();
 * app.use('/api/*', floodgateConcurrencyHono({ limit: 50, maxQueue: 100, tierHeader: 'x-priority', tiers: 3 }));
 */
export function floodgateConcurrencyHono(
  options: FloodgateConcurrencyHonoOptions,
): MiddlewareHandler & ConcurrencyControl {
  const gate = new ConcurrencyGate<Context>(options, options.eventLoopDelay === undefined ? undefined : nodeMonitor());
  const remoteAddress = options.remoteAddress ?? nodeServerAddress;
  async function floodgateConcurrencyHonoMiddleware(c: Context, next: () => Promise<void>): Promise<Response | void> {
    const view = gate.readsRequest ? new FetchRequestView(c, gate.clientIp, remoteAddress) : undefined;
    const pending = gate.admit(view, gate.mayWait ? c.req.raw.signal : undefined);
    const admission: Admission = pending instanceof Promise ? await pending : pending;
    if (!admission.allowed) {
      const answer = gate.refusal(admission);
      return new Response(answer.body, { status: answer.statusCode, headers: answer.headers as [string, string][] });
    }
    const hold = new CallHold();
    const outgoing = nodeServerOf(c)?.outgoing;
    if (outgoing !== undefined && typeof outgoing.once === 'function') {
      // Released when node's response closes: once the body is written, or when the client leaves.
      const end = (): void => hold.end({ statusCode: statusOf(c), completed: outgoing.writableFinished === true });
      if (outgoing.closed === true) end();
      else outgoing.once('close', end);
      // The client left as the slot came free: its handler is not run, and the answer goes nowhere.
      if (!hold.take(admission)) return new Response(null, { status: gate.statusCode });
      await next();
      hold.error = c.error;
      return;
    }
    hold.take(admission);
    try {
      await next();
      hold.error = c.error;
    } catch (err) {
      hold.error = err;
      throw err;
    } finally {
      hold.end({ statusCode: statusOf(c), completed: !c.req.raw.signal.aborted });
    }
  }
  return Object.assign(floodgateConcurrencyHonoMiddleware as MiddlewareHandler, {
    limiter: gate.limiter,
    close: () => gate.close(),
  });
}

/** node's `monitorEventLoopDelay` where the runtime can load it synchronously (node 20.16 and later), else undefined. */
function nodeMonitor(): DelayMonitor | undefined {
  const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const perfHooks = runtime?.getBuiltinModule?.('node:perf_hooks') as
    { monitorEventLoopDelay?: DelayMonitor } | undefined;
  return perfHooks?.monitorEventLoopDelay;
}
