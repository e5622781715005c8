/**
 * The cells of the gateway benchmark: each a reverse proxy in front of the one upstream, in one of
 * two cases. `admit`: one per-IP limit that never refuses (a token bucket of 1,000,000 refilled at
 * 1,000,000/s, or each peer's nearest equivalent). `refuse`: a limit that refuses nearly every
 * request (capacity 1, one token per 1,000 s), so the upstream is never asked.
 */

/** Case is what the limits do to the load: let all of it through, or refuse nearly all of it. */
export type Case = 'admit' | 'refuse';

/** The per-IP token bucket of each case (the Map bucket's and floodgate's; the others' nearest). */
export const BUCKET: Readonly<Record<Case, { capacity: number; refillPerSecond: number }>> = {
  admit: { capacity: 1_000_000, refillPerSecond: 1_000_000 },
  refuse: { capacity: 1, refillPerSecond: 0.001 },
};

/** What floodgate sends as `RateLimit-Policy` in each case (nginx sends the same constant). */
export const POLICY: Readonly<Record<Case, string>> = {
  admit: '"per-client";q=1000000;w=1',
  refuse: '"per-client";q=1;w=1000',
};

/** The kinds of proxy a cell runs. */
export type Kind = 'undici-bare' | 'undici' | 'fastify' | 'nginx' | 'floodgate';

/** FloodgateSetup is a floodgate cell's config: its rules, store and adaptive limit. */
export interface FloodgateSetup {
  readonly rules: 0 | 1 | 3 | 8;
  readonly redis: boolean;
  readonly adaptive: boolean;
  /** Whether the rules are decided from quota leases on the Redis store (`lease: {}`). */
  readonly lease?: boolean;
  /** Whether the access log is on, every exchange logged (to /dev/null: the gateway's work, not the disk's). */
  readonly accessLog?: boolean;
}

/** CellSpec names one cell and what it runs. */
export interface CellSpec {
  readonly name: string;
  readonly case: Case;
  readonly kind: Kind;
  readonly floodgate?: FloodgateSetup;
  /** What the cell does, for the output. */
  readonly does: string;
}

const fg = (rules: 0 | 1 | 3 | 8, redis = false, adaptive = false): FloodgateSetup => ({ rules, redis, adaptive });

/** CELLS are every cell, in the order they run in each round. */
export const CELLS: readonly CellSpec[] = [
  {
    name: 'undici-bare',
    case: 'admit',
    kind: 'undici-bare',
    does: 'node:http + undici Pool (pool.stream), no limit, no added headers: the floor of a Node proxy',
  },
  {
    name: 'undici',
    case: 'admit',
    kind: 'undici',
    does: 'the same + forwarding headers + RateLimit-Policy/RateLimit from a Map token bucket per IP (the reference)',
  },
  {
    name: 'fastify',
    case: 'admit',
    kind: 'fastify',
    does: '@fastify/http-proxy + @fastify/rate-limit (fixed window 1,000,000 per 1 s per IP, RateLimit-Limit/-Remaining/-Reset) + forwarding headers',
  },
  {
    name: 'nginx',
    case: 'admit',
    kind: 'nginx',
    does: 'nginx-light, 1 worker, limit_req per IP at 100,000,000 r/s + forwarding headers + a constant RateLimit-Policy',
  },
  {
    name: 'floodgate-none',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(0),
    does: 'floodgate serve, a route without rules (forwarding headers only)',
  },
  {
    name: 'floodgate',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(1),
    does: 'floodgate serve, one per-IP token bucket on the memory store',
  },
  {
    name: 'floodgate-log',
    case: 'admit',
    kind: 'floodgate',
    floodgate: { ...fg(1), accessLog: true },
    does: 'the same with the access log on, every exchange (a JSON line each, buffered, to /dev/null)',
  },
  {
    name: 'floodgate-3',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(3),
    does: 'floodgate serve, 3 rules (per-IP token bucket, per-route sliding window, per-Host fixed window), memory store',
  },
  {
    name: 'floodgate-adaptive',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(1, false, true),
    does: 'floodgate serve, one rule + an adaptive concurrency limit that never sheds (floor 64 > 50 connections)',
  },
  {
    name: 'floodgate-redis',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(1, true),
    does: 'floodgate serve, one per-IP token bucket on Redis',
  },
  {
    name: 'floodgate-redis-lease',
    case: 'admit',
    kind: 'floodgate',
    floodgate: { ...fg(1, true), lease: true },
    does: 'floodgate serve, the per-IP token bucket on Redis decided from quota leases (lease: {}; one client address, so one hot key)',
  },
  {
    name: 'floodgate-redis-3',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(3, true),
    does: 'floodgate serve, the 3 rules on Redis',
  },
  {
    name: 'floodgate-8',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(8),
    does: 'floodgate serve, the 3 rules and 5 more (per-IP GCRA, fixed window and leaky bucket; a per-route and a per-host window of a second), memory',
  },
  {
    name: 'floodgate-redis-8',
    case: 'admit',
    kind: 'floodgate',
    floodgate: fg(8, true),
    does: 'floodgate serve, the 8 rules on Redis',
  },
  {
    name: 'undici-429',
    case: 'refuse',
    kind: 'undici',
    does: 'the undici peer, bucket (1, 1/1000 s): 429 + the same headers and problem+json body',
  },
  {
    name: 'fastify-429',
    case: 'refuse',
    kind: 'fastify',
    does: '@fastify/rate-limit, 1 per 1000 s: its 429 (RateLimit-* + Retry-After, its JSON body)',
  },
  {
    name: 'nginx-429',
    case: 'refuse',
    kind: 'nginx',
    does: 'limit_req 1r/m, no burst, limit_req_status 429 + a named location: constant RateLimit-Policy, Retry-After, problem+json',
  },
  {
    name: 'floodgate-429',
    case: 'refuse',
    kind: 'floodgate',
    floodgate: fg(1),
    does: 'floodgate serve, per-IP token bucket (1, 1/1000 s), memory store',
  },
  { name: 'floodgate-redis-429', case: 'refuse', kind: 'floodgate', floodgate: fg(1, true), does: 'the same on Redis' },
];

/** REDIS_TWINS pairs each Redis cell with the same rules on the memory store: [Redis cell, memory cell]. */
export const REDIS_TWINS: ReadonlyArray<readonly [string, string]> = [
  ['floodgate-redis', 'floodgate'],
  ['floodgate-redis-3', 'floodgate-3'],
  ['floodgate-redis-8', 'floodgate-8'],
  ['floodgate-redis-429', 'floodgate-429'],
];

/** floodgateYaml returns the config of a floodgate cell: one route to the upstream with the cell's rules. */
export function floodgateYaml(spec: CellSpec, upstreamPort: number, redisPort: number | undefined): string {
  const setup = spec.floodgate!;
  const { capacity, refillPerSecond } = BUCKET[spec.case];
  const store = setup.redis
    ? `store: { type: redis, url: "redis://127.0.0.1:${redisPort ?? 0}", prefix: "${spec.name}:", timeoutMs: 1000 }`
    : 'store: { type: memory }';
  let rules = '';
  if (setup.rules > 0) {
    rules += `
    rules:
      - name: per-client
        policy: { algorithm: tokenBucket, capacity: ${capacity}, refillPerSecond: ${refillPerSecond} }
        key: { type: ip }${setup.lease === true ? '\n        lease: {}' : ''}`;
  }
  if (setup.rules >= 3) {
    rules += `
      - name: per-route
        policy: { algorithm: slidingWindowCounter, limit: 100000000, windowMs: 60000 }
        key: { type: route }
      - name: per-host
        policy: { algorithm: fixedWindow, limit: 100000000, windowMs: 60000 }
        key: { type: header, name: host }`;
  }
  if (setup.rules === 8) {
    rules += `
      - name: per-client-gcra
        policy: { algorithm: gcra, rate: 1000000, periodMs: 1000, maxBurst: 1000000 }
        key: { type: ip }
      - name: per-client-window
        policy: { algorithm: fixedWindow, limit: 100000000, windowMs: 1000 }
        key: { type: ip }
      - name: per-client-leaky
        policy: { algorithm: leakyBucket, capacity: 1000000, leakPerSecond: 1000000 }
        key: { type: ip }
      - name: per-route-second
        policy: { algorithm: slidingWindowCounter, limit: 100000000, windowMs: 1000 }
        key: { type: route }
      - name: per-host-second
        policy: { algorithm: fixedWindow, limit: 100000000, windowMs: 1000 }
        key: { type: header, name: host }`;
  }
  // The adaptive limit's floor (64) is above wrk's connections: every request takes and releases
  // a slot and feeds the estimator, none is shed.
  if (setup.adaptive) rules += '\n    adaptive: { minLimit: 64, initialLimit: 64 }';
  const accessLog = setup.accessLog === true ? 'accessLog: { destination: /dev/null }\n' : '';
  return `${accessLog}${store}\nroutes:\n  - name: all\n    upstream: http://127.0.0.1:${upstreamPort}${rules}\n`;
}

/** keysYaml returns the config of the RSS-per-key cell: every request adds a key to a shadow rule, and a closed route rule answers 429 without going upstream. */
export function keysYaml(upstreamPort: number): string {
  return `store: { type: memory }
routes:
  - name: all
    upstream: http://127.0.0.1:${upstreamPort}
    rules:
      - name: per-key
        mode: shadow
        policy: { algorithm: tokenBucket, capacity: 100, refillPerSecond: 0.001 }
        key: { type: query, name: k }
      - name: closed
        policy: { algorithm: fixedWindow, limit: 1, windowMs: 3600000 }
        key: { type: route }
`;
}
