/** The Koa concurrency middleware (Koa 2 and 3); Koa is imported only as types. */
import type { Context, Middleware, Next } from 'koa';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Admission } from '../../overload/concurrency-limiter.js';
import type { CallHold } from '../call-hold.js';
import { ConcurrencyGate, type ConcurrencyControl, type HttpConcurrencyOptions } from '../overload-gate.js';
import { holdResponse } from './node-hold.js';
import { NodeRequestView } from './node-request.js';
import { koaRoute } from './route-patterns.js';

/** FloodgateConcurrencyKoaOptions are the options of every concurrency middleware, over Koa's `ctx`. */
export type FloodgateConcurrencyKoaOptions = HttpConcurrencyOptions<Context>;

/**
 * floodgateConcurrencyKoa returns a Koa middleware that holds at most `limit` requests (fixed, or
 * learned with `adaptive`) in the middleware after it at once. A request that finds no slot waits
 * in a bounded line (`maxQueue`, `maxWaitMs`; important tiers first) or is answered at once,
 * without running `next()`: 503 (or `statusCode` 429), `Retry-After` in whole seconds and an
 * `application/problem+json` body. An admitted request keeps its slot until its response closes,
 * after Koa has written it; a thrown timeout or a 429/503/504 response is a drop for an adaptive
 * limit, another error or a client that left says nothing, the rest is a latency sample. Errors
 * of `next()` and of `tierOf` are thrown on to Koa's error handling.
 *
 * @example
 * const app = new Koa();
 * app.use(floodgateConcurrencyKoa({ limit: 32, maxQueue: 64, maxWaitMs: 250, statusCode: 429 }));
 */
export function floodgateConcurrencyKoa(options: FloodgateConcurrencyKoaOptions): Middleware & ConcurrencyControl {
  const gate = new ConcurrencyGate<Context>(options, monitorEventLoopDelay);
  // Not an async function: a synchronous admission passes on `next()`'s own promise.
  function floodgateConcurrencyKoaMiddleware(ctx: Context, next: Next): Promise<unknown> {
    const hold = holdResponse(ctx.res);
    let admission: Admission | Promise<Admission>;
    try {
      admission = gate.admit(
        gate.readsRequest ? new NodeRequestView(ctx, gate.clientIp, ctx.req, koaRoute) : undefined,
        gate.mayWait ? hold.signal : undefined,
      );
    } catch (err) {
      return Promise.reject(err);
    }
    if (admission instanceof Promise) return admission.then((a) => proceed(gate, a, hold, ctx, next));
    return proceed(gate, admission, hold, ctx, next);
  }
  return Object.assign(floodgateConcurrencyKoaMiddleware, { limiter: gate.limiter, close: () => gate.close() });
}

/** Answers a shed request, or runs `next()` holding the permit; what `next()` throws is kept for the outcome. */
function proceed(
  gate: ConcurrencyGate<Context>,
  admission: Admission,
  hold: CallHold,
  ctx: Context,
  next: Next,
): Promise<unknown> {
  if (!admission.allowed) {
    // A client that left while waiting is answered nothing: Koa writes no response to a closed socket.
    if (hold.endedEarly) return Promise.resolve();
    const answer = gate.refusal(admission);
    ctx.status = answer.statusCode;
    // Set before the body, so that Koa keeps the problem+json content type.
    for (const [name, value] of answer.headers) ctx.set(name, value);
    ctx.body = answer.body;
    return Promise.resolve();
  }
  if (!hold.take(admission)) return Promise.resolve();
  return next().catch((err: unknown) => {
    hold.error = err;
    throw err;
  });
}
