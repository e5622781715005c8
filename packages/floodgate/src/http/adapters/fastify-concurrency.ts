/**
 * The Fastify concurrency plugin (Fastify 4 and 5): an `onRequest` hook on every route registered
 * after it, unless the route's `config.concurrency` is false. Fastify is imported only as types.
 */
import type {
  FastifyError,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { FloodgateError, describeValue } from '../../core/errors.js';
import type { Admission } from '../../overload/concurrency-limiter.js';
import type { CallHold } from '../call-hold.js';
import { ConcurrencyGate, type HttpConcurrencyOptions, type ShedResponse } from '../overload-gate.js';
import { holdResponse } from './node-hold.js';
import { NodeRequestView } from './node-request.js';
import { fastifyRoute } from './route-patterns.js';

/** FloodgateConcurrencyFastifyOptions are the plugin's options: those of every concurrency middleware, over Fastify's `request`. */
export type FloodgateConcurrencyFastifyOptions = HttpConcurrencyOptions<FastifyRequest>;

/**
 * FloodgateConcurrencyRouteConfig is what a route may put under `config.concurrency`: `false`
 * leaves the route out (a health check), `{ tier }` gives all its requests that tier, over `tierOf`.
 */
export type FloodgateConcurrencyRouteConfig = false | { readonly tier: number };

type OnRequest = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;
type OnError = (request: FastifyRequest, reply: FastifyReply, error: FastifyError, done: () => void) => void;

/**
 * floodgateConcurrencyFastify is the Fastify plugin that holds at most `limit` requests (fixed, or
 * learned with `adaptive`) in the handlers of the routes registered after it. Register it (awaited)
 * before them; it is not encapsulated. A request that finds no slot waits in a bounded line
 * (`maxQueue`, `maxWaitMs`; important tiers first) or is answered at once through `reply`, before
 * its handler: 503 (or `statusCode` 429), `Retry-After` in whole seconds and an
 * `application/problem+json` body. An admitted request keeps its slot until its response closes;
 * a thrown timeout or a 429/503/504 response is a drop for an adaptive limit, another error or a
 * client that left says nothing, the rest is a latency sample. A route's `config.concurrency` is
 * checked when the route is registered (`GET /x: config.concurrency must be ...`). The plugin's
 * event-loop sampling (`eventLoopDelay`) stops when the app closes.
 *
 * @example
 * await app.register(floodgateConcurrencyFastify, { adaptive: true, tiers: 2, maxQueue: 100, maxWaitMs: 500 });
 * app.get('/health', { config: { concurrency: false } }, async () => 'ok');
 * app.post('/checkout', { config: { concurrency: { tier: 0 } } }, checkout);
 */
export const floodgateConcurrencyFastify: FastifyPluginCallback<FloodgateConcurrencyFastifyOptions> = Object.assign(
  function floodgateConcurrencyFastifyPlugin(
    fastify: Parameters<FastifyPluginCallback<FloodgateConcurrencyFastifyOptions>>[0],
    options: FloodgateConcurrencyFastifyOptions,
    done: (err?: Error) => void,
  ): void {
    let gate: ConcurrencyGate<FastifyRequest>;
    try {
      gate = new ConcurrencyGate<FastifyRequest>(options, monitorEventLoopDelay);
    } catch (err) {
      return done(err as Error);
    }
    const holds = new WeakMap<FastifyRequest, CallHold>();
    const keepError: OnError = (request, _reply, error, hookDone) => {
      const hold = holds.get(request);
      if (hold !== undefined) hold.error = error;
      hookDone();
    };
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const config = routeConfig(route);
      if (config === false) return;
      route.onRequest = [
        ...hooksOf(route.onRequest),
        onRequest(gate, holds, config?.tier),
      ] as RouteOptions['onRequest'];
      route.onError = [...hooksOf(route.onError), keepError] as RouteOptions['onError'];
    });
    fastify.addHook('onClose', (_instance, hookDone) => {
      gate.close();
      hookDone();
    });
    done();
  },
  {
    // What fastify-plugin sets: share the hooks with the parent scope, and name the plugin.
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: 'floodgate-concurrency',
    [Symbol.for('plugin-meta')]: { name: 'floodgate-concurrency', fastify: '>=4' },
  },
);

/** The `onRequest` hook of one route: `tier` is the route's own, when its config gives one. */
function onRequest(
  gate: ConcurrencyGate<FastifyRequest>,
  holds: WeakMap<FastifyRequest, CallHold>,
  tier: number | undefined,
): OnRequest {
  return function floodgateConcurrencyOnRequest(request, reply, done) {
    const hold = holdResponse(reply.raw);
    let admission: Admission | Promise<Admission>;
    try {
      const view =
        gate.readsRequest && tier === undefined
          ? new NodeRequestView(request, gate.clientIp, request.raw, fastifyRoute)
          : undefined;
      admission = gate.admit(view, gate.mayWait ? hold.signal : undefined, tier);
    } catch (err) {
      done(err as Error);
      return;
    }
    const proceed = (a: Admission): void => {
      if (!a.allowed) {
        // Answered here: a callback hook that replies must not call done. A client that left is answered nothing.
        if (!hold.endedEarly) send(reply, gate.refusal(a));
      } else if (hold.take(a)) {
        holds.set(request, hold);
        done();
      }
    };
    if (admission instanceof Promise) void admission.then(proceed);
    else proceed(admission);
  };
}

/** Answers a shed request through `reply`, so that the `onSend` and `onResponse` hooks see it. */
function send(reply: FastifyReply, answer: ShedResponse): void {
  reply.code(answer.statusCode);
  for (const [name, value] of answer.headers) reply.header(name, value);
  void reply.send(answer.body);
}

/** The route's `config.concurrency`; a value of the wrong type is refused naming the route. */
function routeConfig(route: RouteOptions): FloodgateConcurrencyRouteConfig | undefined {
  const value = (route.config as { concurrency?: unknown } | undefined)?.concurrency;
  if (value === undefined || value === false) return value;
  const tier = typeof value === 'object' && value !== null ? (value as { tier?: unknown }).tier : undefined;
  if (typeof tier === 'number' && Number.isSafeInteger(tier) && tier >= 0) return { tier };
  const name = `${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`;
  throw new FloodgateError(
    'INVALID_OPTION',
    `${name}: config.concurrency must be false or { tier } with a whole-number tier from 0, got ${describeValue(value)}`,
    'config.concurrency',
  );
}

function hooksOf<H>(hooks: H | H[] | undefined): H[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
