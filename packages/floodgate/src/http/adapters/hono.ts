/**
 * The Hono adapter: fetch-style `Request`/`Response`, so it serves every runtime Hono runs on
 * (node through @hono/node-server, Bun, Deno, workers). Hono is imported only as types.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import type { RateLimitInfo, Verdict } from '../verdict.js';
import { isListField, stackedValue } from '../headers.js';
import { FetchRequestView, nodeServerAddress, nodeServerOf, statusOf } from './fetch-request.js';
import { checkHandler } from './node-request.js';

export { floodgateConcurrencyHono, type FloodgateConcurrencyHonoOptions } from './hono-concurrency.js';
export type { ConcurrencyControl, HttpConcurrencyOptions } from '../overload-gate.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** The rate-limit decision floodgate's middleware made for this request. */
    rateLimit: RateLimitInfo;
  }
}

/** FloodgateHonoOptions adds how to find the client's address, which depends on the runtime. */
export interface FloodgateHonoOptions extends HttpLimitOptions<Context> {
  /**
   * remoteAddress returns the socket peer's address. The default reads @hono/node-server's
   * `c.env.incoming`; on other runtimes pass the runtime's helper, e.g. Hono's `getConnInfo(c).remote.address`.
   */
  remoteAddress?: (c: Context) => string | undefined;
  /**
   * handler answers a refused request itself, e.g. `(c, info) => c.text('slow down', 429)`; the
   * rate-limit headers and `Retry-After` are added to its Response. A 500 is still floodgate's.
   */
  handler?: (c: Context, info: RateLimitInfo) => Response | Promise<Response>;
}

/**
 * floodgateHono returns a Hono middleware that sets the rate-limit headers and awaits `next()` when
 * the request is admitted, and returns a 429 `Response` (`application/problem+json`, `Retry-After`)
 * when it is refused. The decision is `c.get('rateLimit')` (a {@link RateLimitInfo}).
 * `raw` in identities is Hono's `Context`; the route is the matched pattern.
 * With `refundWhen`, the outcome's status is read from `c.res` (500 when the handler threw), and
 * `completed` is truthful: under @hono/node-server it is whether node finished the response
 * before the connection closed (an aborted request is not completed); elsewhere, whether the
 * request's `signal` had not aborted by the time the handler returned.
 * Under @hono/node-server the headers are set on node's response, so they reach every Response
 * the app returns (one it builds with `new Response` too) but are not in `c.res.headers`.
 *
 * @example
 * const app = new Hono();
 * app.use('*', floodgateHono({ limiter: new Limiter({ policy: slidingWindowLog({ limit: 60, windowMs: 60_000 }) }) }));
 */
export function floodgateHono(options: FloodgateHonoOptions): MiddlewareHandler {
  const gate = new HttpGate<Context>(options);
  const remoteAddress = options.remoteAddress ?? nodeServerAddress;
  const handler = checkHandler(options.handler);
  return async function floodgateHonoMiddleware(c, next) {
    const view = new FetchRequestView(c, gate.clientIp, remoteAddress);
    const checked = gate.check(view);
    const verdict: Verdict = checked instanceof Promise ? await checked : checked;
    c.set('rateLimit', verdict);
    if (!verdict.allowed && handler !== undefined && verdict.statusCode !== 500)
      return withHeaders(await handler(c, verdict), refusalHeaders(c, verdict));
    if (!verdict.allowed)
      return new Response(verdict.body, { status: verdict.statusCode, headers: refusalHeaders(c, verdict) });
    setHeaders(c, verdict);
    if (verdict.charges === undefined) return next();
    const outgoing = nodeServerOf(c)?.outgoing;
    // Watched before the handler runs: a client that leaves while it runs closes the response first.
    if (outgoing !== undefined && typeof outgoing.once === 'function') {
      outgoing.once('close', () =>
        gate.settle(verdict, { statusCode: statusOf(c), completed: outgoing.writableFinished === true }, view),
      );
      return next();
    }
    await next();
    gate.settle(verdict, { statusCode: statusOf(c), completed: !c.req.raw.signal.aborted }, view);
  };
}

/** `res` with a refusal's `headers` (not its content type); a copy when its headers are immutable. */
function withHeaders(res: Response, headers: readonly (readonly [string, string])[]): Response {
  let out = res;
  try {
    out.headers.set('cache-control', 'no-store');
  } catch {
    out = new Response(res.body, res);
  }
  for (const [name, value] of headers) if (name !== 'content-type') out.headers.set(name, value);
  return out;
}

/**
 * Sets an admitted request's headers. Under @hono/node-server they go straight onto node's
 * response, which merges them into whatever Response the app returns (a header the app sets
 * itself still wins), instead of through `c.header`, which costs each response a `Headers`
 * object and the server its slow path; elsewhere `c.header` sets them.
 */
function setHeaders(c: Context, verdict: Verdict): void {
  const outgoing = nodeServerOf(c)?.outgoing;
  if (outgoing !== undefined && typeof outgoing.setHeader === 'function' && outgoing.headersSent === false) {
    for (const [name, value] of verdict.headers)
      outgoing.setHeader(name, isListField(name) ? stackedValue(value, outgoing.getHeader?.(name)) : value);
  } else {
    // A stacked middleware's RateLimit items are kept: the draft's list fields are appended to.
    for (const [name, value] of verdict.headers)
      c.header(name, value, isListField(name) ? { append: true } : undefined);
  }
}

/**
 * A refusal's headers, its `RateLimit` and `RateLimit-Policy` after the items an outer floodgate
 * middleware already set (on node's response under @hono/node-server, else on `c`, which Hono
 * copies onto the Response returned).
 */
function refusalHeaders(c: Context, verdict: Verdict): [string, string][] {
  const outgoing = nodeServerOf(c)?.outgoing;
  const node = outgoing !== undefined && typeof outgoing.getHeader === 'function';
  return verdict.headers.map(([name, value]): [string, string] => {
    if (!isListField(name)) return [name, value];
    const merged = stackedValue(value, node ? outgoing.getHeader!(name) : c.res.headers.get(name));
    if (!node) c.header(name, merged);
    return [name, merged];
  });
}
