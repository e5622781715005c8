/**
 * Identities: who a request counts against. Each returns a kind-prefixed string (`ip:…`,
 * `user:…`) or undefined when the request has no such identity; the handler namespaces and
 * bounds it into a store key.
 */
import { FloodgateError, describeValue } from '../core/errors.js';
import { BoundedCache } from './cache.js';
import { formatIp, maskIp, parseIp } from './ip.js';
import type { HttpRequest } from './request.js';

/**
 * Identity returns the identity a request is counted under, such as `ip:192.0.2.1`, or undefined
 * when it has none (the dimension then does not apply to the request).
 */
export type Identity<Req = unknown> = (req: HttpRequest<Req>) => string | undefined;

/** ByIpOptions configures {@link byIp}. */
export interface ByIpOptions {
  /** IPv6 clients are grouped by this prefix (default 56, one customer site; 1 to 128). */
  ipv6PrefixBits?: number;
  /** IPv4 clients are grouped by this prefix (default 32: each address alone; 1 to 32). */
  ipv4PrefixBits?: number;
}

/** Groups remembered per byIp identity before its cache starts over. */
const IP_CACHE_SIZE = 4096;

/**
 * byIp returns the identity of the client's address (see the `trustProxy` option for proxies):
 * `ip:192.0.2.1`, or for IPv6 its prefix, `ip:2001:db8:0:100::/56`, since one subscriber usually
 * holds a whole /56 (or /48) and could otherwise rotate addresses to escape the limit.
 * IPv4-mapped IPv6 addresses count as IPv4. A client with no known address is `ip:unknown`; one a
 * trusted proxy names by an obfuscated identifier is `ip:_hidden`.
 *
 * @example
 * floodgateExpress({ limiter, key: byIp({ ipv6PrefixBits: 64 }), trustProxy: 1 });
 */
export function byIp(options: ByIpOptions = {}): Identity {
  const v6Bits = prefixOption(options.ipv6PrefixBits ?? 56, 128, 'byIp.ipv6PrefixBits');
  const v4Bits = prefixOption(options.ipv4PrefixBits ?? 32, 32, 'byIp.ipv4PrefixBits');
  const cache = new BoundedCache<string>(IP_CACHE_SIZE);
  return function ipIdentity(req) {
    const address = req.ip;
    let identity = cache.get(address);
    if (identity === undefined) {
      identity = `ip:${group(address, v4Bits, v6Bits)}`;
      cache.set(address, identity);
    }
    return identity;
  };
}

function group(address: string, v4Bits: number, v6Bits: number): string {
  const ip = parseIp(address);
  // A trusted proxy's obfuscated identifier (RFC 7239 section 6.3) names one client: keep it.
  if (ip === undefined) return address.startsWith('_') ? address : 'unknown';
  const bits = ip.version === 4 ? v4Bits : v6Bits;
  const full = ip.version === 4 ? 32 : 128;
  return bits === full ? formatIp(ip) : `${formatIp(maskIp(ip, bits))}/${bits}`;
}

function prefixOption(value: unknown, max: number, option: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a whole number from 1 to ${max}, got ${describeValue(value)}`,
      option,
    );
  }
  return value;
}

/**
 * byHeader returns the identity of a request header's value, such as an API key:
 * `header:x-api-key:<value>`. A missing or blank header is no identity; pair it with
 * {@link firstOf} and {@link byIp} so that omitting the header does not escape the limit.
 *
 * @example
 * const key = firstOf(byHeader('X-API-Key'), byIp());
 */
export function byHeader(name: string): Identity {
  if (typeof name !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `byHeader needs a header name such as "x-api-key", got ${describeValue(name)}`,
      'byHeader.name',
    );
  }
  const lower = name.toLowerCase();
  const kind = `header:${lower}:`;
  return function headerIdentity(req) {
    const value = req.header(lower)?.trim();
    return value === undefined || value === '' ? undefined : kind + value;
  };
}

/**
 * byUser returns the identity of the authenticated user, `user:<id>`, from `userId(raw, req)`:
 * `raw` is the framework's request, where authentication leaves the user (Express `req`, Fastify
 * `request`, Koa `ctx`, Hono `c`), and `req` floodgate's framework-neutral view of the same
 * request (`method`, `path`, `ip`, `header(name)`), the one every other option function gets.
 * An absent, null or empty id (an anonymous request) is no identity.
 *
 * @example
 * const key = byUser((req: express.Request) => req.user?.id);
 * const sameOnEveryFramework = byUser((_raw, req) => req.header('x-user-id'));
 */
export function byUser<Req>(
  userId: (raw: Req, req: HttpRequest<Req>) => string | number | null | undefined,
): Identity<Req> {
  if (typeof userId !== 'function') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `byUser needs a function from the request to the user's id, got ${describeValue(userId)}`,
      'byUser',
    );
  }
  return function userIdentity(req) {
    const id = userId(req.raw, req);
    if (id === undefined || id === null || id === '') return undefined;
    return `user:${String(id)}`;
  };
}

/** ByRouteOptions configures {@link byRoute}. */
export interface ByRouteOptions {
  /** Whether the method is part of the route (default true): `GET /a` and `POST /a` differ. */
  method?: boolean;
}

/**
 * byRoute returns the identity of the route, `route:GET /users/:id`: one shared budget per
 * endpoint, typically combined with a per-client dimension. Where the framework has not matched a
 * route yet (Express and node:http middleware ahead of the router), the path stands in for it.
 *
 * @example
 * dimensions: [{ name: 'route', limiter: perRoute, key: byRoute() }]
 */
export function byRoute(options: ByRouteOptions = {}): Identity {
  const withMethod = options.method ?? true;
  return function routeIdentity(req) {
    return withMethod ? `route:${req.method} ${req.route}` : `route:${req.route}`;
  };
}

/**
 * byFunction returns an identity computed by `fn`, as `fn:<value>`; undefined from `fn` means no
 * identity. The prefix keeps its values apart from every other kind of identity.
 *
 * @example
 * const key = byFunction((req) => req.header('x-tenant'));
 */
export function byFunction<Req>(fn: (req: HttpRequest<Req>) => string | undefined): Identity<Req> {
  if (typeof fn !== 'function') {
    throw new FloodgateError('INVALID_OPTION', `byFunction needs a function, got ${describeValue(fn)}`, 'byFunction');
  }
  return function functionIdentity(req) {
    const value = fn(req);
    return value === undefined ? undefined : `fn:${String(value)}`;
  };
}

/**
 * firstOf returns the first identity any of `identities` finds, in order: for example the user
 * when signed in, else the client's address.
 *
 * @example
 * const key = firstOf(byUser((req: express.Request) => req.user?.id), byIp());
 */
export function firstOf<Req>(...identities: Identity<Req>[]): Identity<Req> {
  if (identities.length === 0 || identities.some((i) => typeof i !== 'function')) {
    throw new FloodgateError(
      'INVALID_OPTION',
      'firstOf needs one or more identities, e.g. firstOf(byUser(fn), byIp())',
      'firstOf',
    );
  }
  return function firstIdentity(req) {
    for (const identity of identities) {
      const found = identity(req);
      if (found !== undefined) return found;
    }
    return undefined;
  };
}
