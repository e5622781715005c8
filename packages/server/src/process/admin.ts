/**
 * The admin listener, apart from the traffic port: health and readiness, Prometheus metrics, and
 * the admin API behind a bearer token (compared in constant time) to read, reset and refund a key,
 * dump the active config (secrets redacted) and reload it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from 'floodgate';
import type { DashboardEndpoints } from '../dashboard/http.js';
import type { CompiledRule } from '../gateway/routes.js';
import type { GatewayMetrics } from '../ops/metrics.js';

/** AdminContext is what the admin listener reads of the running gateway. */
export interface AdminContext {
  readonly metrics: GatewayMetrics;
  /** The SHA-256 of the admin token; undefined disables the admin API. */
  readonly tokenDigest: Buffer | undefined;
  isReady(): boolean;
  /** rule returns a route's rule in the active config. */
  rule(route: string, rule: string): CompiledRule | undefined;
  /** activeConfig returns the running config, redacted, with when it was loaded. */
  activeConfig(): unknown;
  reload(): Promise<{ applied: boolean; problems: readonly string[] }>;
  /** The dashboard's endpoints under `/dashboard`; undefined when it is off. */
  readonly dashboard?: DashboardEndpoints | undefined;
}

/** tokenDigest returns the SHA-256 of a token: digests of equal length are compared in constant time. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** adminHandler returns the admin listener's request handler. */
export function adminHandler(ctx: AdminContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    route(ctx, req, res).catch((err: unknown) => json(res, 500, { error: (err as Error).message }));
  };
}

async function route(ctx: AdminContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = targetUrl(req.url ?? '/');
  if (url === undefined)
    return json(res, 400, {
      error: `the request target must be a path such as /admin/keys, got ${JSON.stringify(req.url)}`,
    });
  if (url.pathname === '/healthz') return json(res, 200, { status: 'ok' });
  if (url.pathname === '/readyz')
    return ctx.isReady() ? json(res, 200, { status: 'ready' }) : json(res, 503, { status: 'not ready' });
  if (url.pathname === '/metrics') {
    const body = await ctx.metrics.registry.metrics();
    res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType });
    res.end(body);
    return;
  }
  if (url.pathname === '/dashboard' || url.pathname.startsWith('/dashboard/')) {
    if (ctx.dashboard === undefined)
      return json(res, 404, {
        error:
          'the dashboard is off: set admin.tokenEnv (or admin.token) in the config, and leave admin.dashboard.enabled on',
      });
    return ctx.dashboard.serve(req, res, url.pathname);
  }
  if (!url.pathname.startsWith('/admin/')) return json(res, 404, { error: `no such endpoint: ${url.pathname}` });
  if (ctx.tokenDigest === undefined)
    return json(res, 404, { error: 'the admin API is off: set admin.tokenEnv (or admin.token) in the config' });
  if (!authorized(req, ctx.tokenDigest)) {
    res.setHeader('www-authenticate', 'Bearer realm="floodgate-admin"');
    return json(res, 401, { error: 'a valid admin token is needed: Authorization: Bearer <token>' });
  }
  await adminApi(ctx, req, res, url);
}

async function adminApi(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const method = req.method ?? 'GET';
  if (url.pathname === '/admin/config' && method === 'GET') return json(res, 200, ctx.activeConfig());
  if (url.pathname === '/admin/reload' && method === 'POST') {
    const result = await ctx.reload();
    return json(res, result.applied ? 200 : 422, result);
  }
  const keyAction = /^\/admin\/keys(?:\/(reset|refund))?$/.exec(url.pathname);
  if (keyAction === null) return json(res, 404, { error: `no such admin endpoint: ${method} ${url.pathname}` });
  const action = keyAction[1] ?? 'read';
  if ((action === 'read') !== (method === 'GET') || (action !== 'read' && method !== 'POST'))
    return json(res, 405, { error: `use ${action === 'read' ? 'GET' : 'POST'} for ${url.pathname}` });
  const target = targetOf(ctx, url);
  if (typeof target === 'string') return json(res, 400, { error: target });
  const { rule, key } = target;
  if (action === 'reset') await rule.limiter.reset(key);
  if (action === 'refund') {
    const cost = Number(url.searchParams.get('cost') ?? rule.cost);
    if (!Number.isFinite(cost) || cost < 0)
      return json(res, 400, {
        error: `cost must be a finite number of at least 0, got ${url.searchParams.get('cost')}`,
      });
    await rule.limiter.refund(key, cost);
  }
  const decision: Decision = await rule.limiter.peek(key, { cost: 0 });
  return json(res, 200, {
    key,
    action,
    state: { limit: decision.limit, remaining: decision.remaining, resetMs: decision.resetMs, reason: decision.reason },
  });
}

/**
 * The URL of a request target: an origin-form target (`/path?query`) is a path on this listener,
 * even one starting `//` (which a URL parser would read as naming a host); an absolute-form
 * target is read as it is. Undefined for any other target (`*`, or one that is no URL).
 */
function targetUrl(target: string): URL | undefined {
  const text = target.startsWith('/') ? `http://admin${target}` : target;
  return URL.canParse(text) ? new URL(text) : undefined;
}

/** The rule and store key a request names by `route`, `rule` and `identity` (as the rule keys it, e.g. `ip:127.0.0.1`). */
function targetOf(ctx: AdminContext, url: URL): { rule: CompiledRule; key: string } | string {
  const routeName = url.searchParams.get('route');
  const ruleName = url.searchParams.get('rule');
  const identity = url.searchParams.get('identity');
  if (routeName === null || ruleName === null || identity === null || identity === '')
    return 'give route, rule and identity (e.g. ?route=api&rule=per-ip&identity=ip:192.0.2.1)';
  const rule = ctx.rule(routeName, ruleName);
  if (rule === undefined) return `no rule "${ruleName}" in route "${routeName}" in the active config`;
  return { rule, key: rule.keyOf(identity) };
}

function authorized(req: IncomingMessage, digest: Buffer): boolean {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  if (match === null) return false;
  return timingSafeEqual(tokenDigest(match[1]!.trim()), digest);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}
