/**
 * The Fastify adapter (Fastify 4 and 5): a plugin that adds an `onRequest` hook to every route
 * registered after it (or, with `global: false`, to the routes that ask), with per-route options.
 * Fastify is imported only as types.
 */
import type {
  FastifyBaseLogger,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify';
import { FloodgateError, describeValue } from '../../core/errors.js';
import { HttpGate } from '../gate.js';
import type { Logger } from '../logger.js';
import type { HttpLimitOptions } from '../options.js';
import { RateLimitedError } from '../refusal-error.js';
import { isListField, stackedValue } from '../headers.js';
import type { RateLimitInfo, Verdict } from '../verdict.js';
import { NodeRequestView, watchOutcome } from './node-request.js';
import { fastifyRoute } from './route-patterns.js';

export { RateLimitedError } from '../refusal-error.js';

export {
  floodgateConcurrencyFastify,
  type FloodgateConcurrencyFastifyOptions,
  type FloodgateConcurrencyRouteConfig,
} from './fastify-concurrency.js';
export type { HttpConcurrencyOptions } from '../overload-gate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The rate-limit decision floodgate's plugin made for this request. */
    rateLimit?: RateLimitInfo;
  }
}

/** FloodgateFastifyOptions are the plugin's options: those of every adapter, and Fastify's own. */
export interface FloodgateFastifyOptions extends HttpLimitOptions<FastifyRequest> {
  /**
   * false limits only the routes whose `config.rateLimit` asks (`true` or options); the plugin's
   * `limiter`/`dimensions` may then be left out, each such route giving its own. Default true:
   * every route, unless its `config.rateLimit` is false.
   */
  global?: boolean;
  /**
   * How a refused request is answered: `reply` (default) sends the 429/503 problem+json itself
   * through `reply` (the `onSend` and `onResponse` hooks see it); `error` hands a
   * {@link RateLimitedError} to Fastify's error handling, as @fastify/rate-limit does, so that
   * `setErrorHandler` and `onError` hooks answer it (the rate-limit headers are already set).
   */
  refuseWith?: 'reply' | 'error';
}

/**
 * FloodgateRouteConfig is what a route may put under `config.rateLimit` (or its older name
 * `config.floodgate`): `false` to exempt the route, `true` to use the plugin's options (for
 * `global: false`), or options that override the plugin's for that route (for example its own
 * `limiter`, `dimensions` or `cost`). Limiters given once are shared by every route that uses them.
 */
export type FloodgateRouteConfig = boolean | Partial<HttpLimitOptions<FastifyRequest>>;

type OnRequest = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;
type Refuse = FloodgateFastifyOptions['refuseWith'];

/**
 * floodgateFastify is the Fastify plugin. Register it (awaited) before the routes it guards; it is
 * not encapsulated, so it applies to routes in every scope. Admitted requests get the rate-limit
 * headers; refused ones a 429 (`application/problem+json`, `Retry-After`) before any handler runs,
 * or with `refuseWith: 'error'` a {@link RateLimitedError} for the error handler. `raw` in
 * identities is Fastify's `request`; the route is the route's URL pattern. The decision is
 * attached as `request.rateLimit` (a {@link RateLimitInfo}). Warnings go to
 * `fastify.log` unless a `logger` is given. A route's config is checked when the route is
 * registered: a bad one throws an `INVALID_OPTION` error naming the route (`GET /x: limiter must be ...`).
 *
 * @example
 * await app.register(floodgateFastify, { limiter: new Limiter({ policy: tokenBucket({ capacity: 20, refillPerSecond: 5 }) }) });
 * app.get('/health', { config: { rateLimit: false } }, () => 'ok');
 * app.post('/login', { config: { rateLimit: { limiter: loginLimiter, name: 'login' } } }, login);
 */
export const floodgateFastify: FastifyPluginCallback<FloodgateFastifyOptions> = Object.assign(
  function floodgateFastifyPlugin(
    fastify: Parameters<FastifyPluginCallback<FloodgateFastifyOptions>>[0],
    options: FloodgateFastifyOptions,
    done: (err?: Error) => void,
  ): void {
    const { global = true, refuseWith = 'reply', ...rest } = options;
    if (typeof global !== 'boolean') return done(invalid('global', 'true or false', global));
    if (refuseWith !== 'reply' && refuseWith !== 'error')
      return done(invalid('refuseWith', '"reply" or "error"', refuseWith));
    const base: HttpLimitOptions<FastifyRequest> = { ...rest, logger: rest.logger ?? fastifyLogger(fastify.log) };
    let shared: OnRequest | undefined;
    const sharedHook = (): OnRequest => (shared ??= floodgateOnRequest(new HttpGate(base), refuseWith));
    // Built now when every route uses it, so that a bad plugin option fails `register`.
    if (global || base.limiter !== undefined || base.dimensions !== undefined) {
      try {
        sharedHook();
      } catch (err) {
        return done(err as Error);
      }
    }
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const config = routeConfig(route);
      if (config === false || (config === undefined && !global)) return;
      const hook =
        config === undefined || config === true
          ? atRouteIfThrows(route, sharedHook)
          : routeHook(route, base, config, refuseWith);
      const existing =
        route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
      route.onRequest = [...existing, hook] as RouteOptions['onRequest'];
    });
    done();
  },
  {
    // What fastify-plugin sets: share the hook with the parent scope, and name the plugin.
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: 'floodgate',
    [Symbol.for('plugin-meta')]: { name: 'floodgate', fastify: '>=4' },
  },
);

/** The route's `config.rateLimit` (or `config.floodgate`); giving both, or a value of the wrong type, is refused naming the route. */
function routeConfig(route: RouteOptions): FloodgateRouteConfig | undefined {
  const config = route.config as { rateLimit?: unknown; floodgate?: unknown } | undefined;
  if (config?.rateLimit !== undefined && config.floodgate !== undefined) {
    throw atRoute(
      route,
      invalid('config.rateLimit', 'given alone (config.floodgate is its older name)', config.floodgate),
    );
  }
  const value = config?.rateLimit ?? config?.floodgate;
  if (
    value === undefined ||
    typeof value === 'boolean' ||
    (typeof value === 'object' && value !== null && !Array.isArray(value))
  )
    return value as FloodgateRouteConfig | undefined;
  throw atRoute(route, invalid('config.rateLimit', 'true, false or an object of options', value));
}

/** The hook for a route with options of its own, checked now: an error names the route. */
function routeHook(
  route: RouteOptions,
  base: HttpLimitOptions<FastifyRequest>,
  config: Partial<HttpLimitOptions<FastifyRequest>>,
  refuseWith: Refuse,
): OnRequest {
  return atRouteIfThrows(route, () => floodgateOnRequest(new HttpGate(routeOptions(base, config)), refuseWith));
}

/** `make()`, its error naming the route (the plugin's options, first built for a route under `global: false`). */
function atRouteIfThrows(route: RouteOptions, make: () => OnRequest): OnRequest {
  try {
    return make();
  } catch (err) {
    throw atRoute(route, err);
  }
}

/** A route's options: its own limiter or dimensions replace the plugin's; the rest are merged. */
function routeOptions(
  base: HttpLimitOptions<FastifyRequest>,
  config: Partial<HttpLimitOptions<FastifyRequest>>,
): HttpLimitOptions<FastifyRequest> {
  const merged = { ...base, ...config };
  if (config.dimensions !== undefined) delete merged.limiter;
  if (config.limiter !== undefined) delete merged.dimensions;
  return merged;
}

/** `err` with the route (`GET /x: ...`) in front of its message; a FloodgateError keeps its code and option. */
function atRoute(route: RouteOptions, err: unknown): Error {
  const name = `${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`;
  if (err instanceof FloodgateError) return new FloodgateError(err.code, `${name}: ${err.message}`, err.option);
  return new Error(`${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

/** The {@link Logger} over Fastify's own (pino-style) logger. */
function fastifyLogger(log: FastifyBaseLogger): Logger {
  return {
    warn: (message, detail) => (detail === undefined ? log.warn(message) : log.warn({ err: detail }, message)),
  };
}

/** The `onRequest` hook for one gate. */
function floodgateOnRequest(gate: HttpGate<FastifyRequest>, refuseWith: Refuse): OnRequest {
  return function floodgateOnRequestHook(request, reply, done) {
    const view = new NodeRequestView(request, gate.clientIp, request.raw, fastifyRoute);
    let checked: Verdict | Promise<Verdict>;
    try {
      checked = gate.check(view);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (checked instanceof Promise) checked.then((v) => apply(gate, v, view, reply, done, refuseWith), done);
    else apply(gate, checked, view, reply, done, refuseWith);
  };
}

function apply(
  gate: HttpGate<FastifyRequest>,
  verdict: Verdict,
  view: NodeRequestView<FastifyRequest>,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
  refuseWith: Refuse,
): void {
  reply.request.rateLimit = verdict;
  for (const [name, value] of verdict.headers)
    reply.header(name, isListField(name) ? stackedValue(value, reply.getHeader(name)) : value);
  if (!verdict.allowed) {
    reply.code(verdict.statusCode);
    if (refuseWith === 'error') done(new RateLimitedError(verdict));
    // Answered here: a callback hook that replies must not call done.
    else reply.send(verdict.body);
    return;
  }
  watchOutcome(gate, verdict, reply.raw, view);
  done();
}

function invalid(option: string, expected: string, got: unknown): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `${option} must be ${expected}, got ${describeValue(got)}`, option);
}
