/**
 * Where each framework on node:http keeps the route pattern a request matched, read structurally
 * so that this file imports no framework: one home for the rate-limit and the concurrency adapters.
 */

/** expressRoute returns the matched route pattern under its mount point, when Express has matched one. */
export function expressRoute(req: { readonly route?: unknown; readonly baseUrl?: string }): string | undefined {
  const path: unknown = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? (req.baseUrl ?? '') + path : undefined;
}

/** koaRoute returns koa-router's matched pattern, when the middleware runs inside the router. */
export function koaRoute(ctx: object): string | undefined {
  const route: unknown = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}

/** fastifyRoute returns the URL pattern of the route Fastify matched. */
export function fastifyRoute(request: {
  readonly routeOptions: { readonly url?: string | undefined };
}): string | undefined {
  return request.routeOptions.url;
}
