/**
 * The Fastify adapter (Fastify 4 and 5): a plugin that adds an `onRequest` hook to every route
 * registered after it, with per-route options. Fastify is imported only as types.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { HttpGate } from '../gate.js';
import type { HttpLimitOptions } from '../options.js';
import type { Verdict } from '../verdict.js';
import { NodeRequestView, watchOutcome } from './node-request.js';

/** FloodgateFastifyOptions are the plugin's options: those of every adapter. */
export type FloodgateFastifyOptions = HttpLimitOptions<FastifyRequest>;

/**
 * FloodgateRouteConfig is what a route may put under `config.floodgate`: `false` to exempt the
 * route, or options that override the plugin's for that route (for example its own `limiter`,
 * `dimensions` or `cost`). Limiters given once are shared by every route that uses them.
 */
export type FloodgateRouteConfig = false | Partial<FloodgateFastifyOptions>;

type OnRequest = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/**
 * floodgateFastify is the Fastify plugin. Register it (awaited) before the routes it guards; it is
 * not encapsulated, so it applies to routes in every scope. Admitted requests get the rate-limit
 * headers; refused ones a 429 (`application/problem+json`, `Retry-After`) before any handler runs.
 * `raw` in identities is Fastify's `request`; the route is the route's URL pattern.
 *
 * @example
 * await app.register(floodgateFastify, { limiter: new Limiter({ policy: tokenBucket({ capacity: 20, refillPerSecond: 5 }) }) });
 * app.get('/health', { config: { floodgate: false } }, () => 'ok');
 * app.post('/login', { config: { floodgate: { limiter: loginLimiter, name: 'login' } } }, login);
 */
export const floodgateFastify: FastifyPluginCallback<FloodgateFastifyOptions> = Object.assign(
  function floodgateFastifyPlugin(fastify: Parameters<FastifyPluginCallback<FloodgateFastifyOptions>>[0], options: FloodgateFastifyOptions, done: (err?: Error) => void): void {
    const base = { ...options };
    let shared: OnRequest | undefined;
    try {
      shared = floodgateOnRequest(new HttpGate(base));
    } catch (err) {
      done(err as Error);
      return;
    }
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const config = (route.config as { floodgate?: FloodgateRouteConfig } | undefined)?.floodgate;
      if (config === false) return;
      const hook = config === undefined ? shared : floodgateOnRequest(new HttpGate(routeOptions(base, config)));
      const existing = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
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

/** A route's options: its own limiter or dimensions replace the plugin's; the rest are merged. */
function routeOptions(base: FloodgateFastifyOptions, config: Partial<FloodgateFastifyOptions>): FloodgateFastifyOptions {
  const merged = { ...base, ...config };
  if (config.dimensions !== undefined) delete merged.limiter;
  if (config.limiter !== undefined) delete merged.dimensions;
  return merged;
}

/** The `onRequest` hook for one gate. */
function floodgateOnRequest(gate: HttpGate<FastifyRequest>): OnRequest {
  return function floodgateOnRequestHook(request, reply, done) {
    const view = new NodeRequestView(request, gate.clientIp, request.raw, fastifyRoute);
    let checked: Verdict | Promise<Verdict>;
    try {
      checked = gate.check(view);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (checked instanceof Promise) checked.then((v) => apply(gate, v, view, reply, done), done);
    else apply(gate, checked, view, reply, done);
  };
}

function apply(gate: HttpGate<FastifyRequest>, verdict: Verdict, view: NodeRequestView<FastifyRequest>, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  for (const [name, value] of verdict.headers) reply.header(name, value);
  if (!verdict.allowed) {
    // Answered here: a callback hook that replies must not call done.
    reply.code(verdict.statusCode).send(verdict.body);
    return;
  }
  watchOutcome(gate, verdict, reply.raw, view);
  done();
}

function fastifyRoute(request: FastifyRequest): string | undefined {
  return request.routeOptions.url;
}
