/**
 * The gateway's config file, as a strict zod schema: an unknown key anywhere is an error, every
 * number says its unit in its name, and `floodgate schema` prints the same schema as JSON Schema.
 */
import * as z from 'zod';
import { listenSchema } from './listen-schema.js';
import { ambiguousSchema, pathsSchema } from './match-schema.js';
import { protectionFields, upstreamSchema } from './overload-schema.js';
import { smoothPolicySchemas } from './smooth-schema.js';

const positive = z.number().positive();
const whole = z.number().int();
const name = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a name is 1-64 of A-Z a-z 0-9 _ . -');

const windowLimit = positive.describe('The most cost admitted in one window.');
const windowLength = positive.describe('The length of the window, in ms.');

/** policySchema is one library policy, chosen by `algorithm`, with that factory's options (the smooth ones pace a queue-mode rule). */
export const policySchema = z.discriminatedUnion('algorithm', [
  z.strictObject({
    algorithm: z.literal('tokenBucket'),
    capacity: positive.describe('The most cost the bucket holds: the largest burst a fresh key admits at once.'),
    refillPerSecond: positive.describe('The cost the bucket refills each second.'),
  }),
  z.strictObject({
    algorithm: z.literal('leakyBucket'),
    capacity: positive.describe('The most cost the bucket holds before it refuses.'),
    leakPerSecond: positive.describe('The cost that drains from the bucket each second.'),
  }),
  z.strictObject({ algorithm: z.literal('fixedWindow'), limit: windowLimit, windowMs: windowLength }),
  z.strictObject({
    algorithm: z.literal('slidingWindowLog'),
    limit: whole.positive().describe('The most cost admitted in one window.'),
    windowMs: windowLength,
  }),
  z.strictObject({
    algorithm: z.literal('slidingWindowCounter'),
    limit: windowLimit,
    windowMs: windowLength,
    subWindows: whole
      .positive()
      .optional()
      .describe(
        "Sub-windows the window is cut into and summed, dividing windowMs exactly (omitted: the previous window's count, weighted by overlap).",
      ),
  }),
  z.strictObject({
    algorithm: z.literal('gcra'),
    rate: positive.describe('The cost admitted per periodMs at the steady rate.'),
    periodMs: positive.describe('The period the rate is counted over, in ms.'),
    maxBurst: whole
      .nonnegative()
      .optional()
      .describe(
        'Extra cost admitted at once beyond one unit: a fresh key admits maxBurst + 1 at one instant (default 0).',
      ),
  }),
  ...smoothPolicySchemas,
]);

const secretFields = {
  secret: z
    .string()
    .min(16, 'an HS256 secret needs at least 16 characters')
    .optional()
    .describe('The HS256 secret itself (prefer `secretEnv`: a secret in a file is a secret in backups).'),
  secretEnv: z.string().min(1).optional().describe('The name of the environment variable holding the HS256 secret.'),
};

/** What a rule does with a request whose identity is absent or invalid: answer 401, count it by client address, or not apply. */
const identityAction = z.enum(['refuse', 'fallback', 'skip']);
const faultFields = {
  onAbsent: identityAction
    .default('fallback')
    .describe('When the header, token or parameter is missing, empty or blank (default fallback: the client address).'),
};
const invalidField = {
  onInvalid: identityAction
    .default('refuse')
    .describe(
      'When a token is refused (alg none, bad signature, expired, ...) or a parameter repeated with another value (default refuse).',
    ),
};

/** keySchema is who a request counts against, and (for identities a request can lack) what happens when it does. */
export const keySchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('ip'),
    ipv6PrefixBits: whole
      .min(1)
      .max(128)
      .optional()
      .describe('How many leading bits of an IPv6 address count as one client (default 56).'),
  }),
  z.strictObject({
    type: z.literal('header'),
    name: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name such as x-api-key'),
    ...faultFields,
  }),
  z.strictObject({
    type: z.literal('jwt'),
    claim: z.string().min(1).describe('The claim of the verified token whose value is the identity, such as sub.'),
    header: z.string().min(1).optional().describe('The header carrying the bearer token (default authorization).'),
    verify: z
      .literal(false)
      .optional()
      .describe(
        'false reads the claim without verifying the token, only safe behind a proxy that verifies every token and strips the header otherwise; without it, secret or secretEnv is required.',
      ),
    ...secretFields,
    ...faultFields,
    ...invalidField,
  }),
  z.strictObject({
    type: z.literal('query'),
    name: z.string().min(1).describe('The query parameter whose value is the identity.'),
    ...faultFields,
    ...invalidField,
  }),
  z.strictObject({
    type: z.literal('param'),
    name: z.string().min(1).describe("The route pattern's `:name` parameter whose value is the identity."),
  }),
  z.strictObject({ type: z.literal('route') }),
]);

/** ruleSchema is one limit on a route. */
export const ruleSchema = z.strictObject({
  name: name.describe("The rule's name, unique in its route (in metrics, logs and headers)."),
  policy: policySchema.describe('The limit: an algorithm and its options.'),
  key: keySchema.default({ type: 'ip' }).describe('Who a request counts against (default: the client address).'),
  cost: z.number().nonnegative().default(1).describe('What one request costs under this rule (default 1).'),
  mode: z
    .enum(['enforce', 'shadow', 'queue'])
    .default('enforce')
    .describe('enforce (default) refuses with 429; shadow decides and reports only; queue delays instead of refusing.'),
  queue: z
    .strictObject({
      maxWaitMs: positive
        .default(1000)
        .describe('The longest a queued request waits for its turn, in ms, before a 503 (default 1000).'),
      maxQueue: whole.nonnegative().default(100).describe('The most requests waiting per key (default 100).'),
    })
    .optional()
    .describe('How a queue-mode rule waits (omitted: maxWaitMs 1000, maxQueue 100).'),
  /** Decide this rule from quota leases on the Redis store (the library's LeasedStore) instead of a round trip per request. */
  lease: z
    .strictObject({
      leaseMs: positive
        .optional()
        .describe(
          'How long units leased to a gateway may be spent, in ms (default 1000): what a dead gateway holds at most.',
        ),
      maxOutstandingShare: positive
        .max(1)
        .optional()
        .describe(
          "The share of the policy's limit out on leases at once across all gateways (default 0.02): the worst-case over-admission.",
        ),
      maxKeys: whole
        .positive()
        .optional()
        .describe(
          'Most keys a gateway keeps lease state for (default 10,000); the least recently used give their units back.',
        ),
    })
    .optional()
    .describe(
      'Decide this rule from quota leases on the Redis store instead of a round trip per request (enforce or shadow mode; tokenBucket, leakyBucket, gcra or fixedWindow).',
    ),
  /**
   * The statuses for which the gateway gives back what an admitted request spent under this rule
   * (enforce and queue modes), when it answered them itself: 502 (the upstream failed), 504 (it
   * timed out), 413 (the body passed `limits.maxBodyBytes`). Never for a client that left, nor for
   * an upstream's own 502. Default: none.
   */
  refundOn: z
    .array(
      z
        .union([z.literal(413), z.literal(502), z.literal(504)], {
          error: 'refundOn lists 413 (body too large), 502 (upstream failed) or 504 (upstream timed out)',
        })
        .describe('One such status: 413, 502 or 504.'),
    )
    .optional()
    .describe(
      "The statuses the gateway answers itself (502 upstream failed, 504 timed out, 413 body too large) for which an admitted request gets this rule's cost back.",
    ),
});

/** routeSchema is one route: what it matches, where it forwards, its rules and its overload protection. */
export const routeSchema = z.strictObject({
  name: name.describe("The route's name, unique in the file (in metrics, logs and headers)."),
  match: z
    .strictObject({
      host: z
        .string()
        .min(1)
        .optional()
        .describe(
          'The Host the request must name, without port (`*.example.com` matches any subdomain; omitted: any host).',
        ),
      methods: z
        .array(z.string().regex(/^[A-Z]+$/, 'an HTTP method in upper case, such as GET'))
        .min(1)
        .optional()
        .describe('The methods matched, in upper case (omitted: every method).'),
      path: z
        .string()
        .startsWith('/', 'a path starts with /')
        .default('/*')
        .describe("The path pattern, matched against the request's path in normal form (so written in normal form)."),
      caseSensitive: z
        .boolean()
        .default(false)
        .describe('Whether `/API` and `/api` are different paths (default false, as Express by default).'),
      strictTrailingSlash: z
        .boolean()
        .default(false)
        .describe('Whether `/a/` and `/a` are different paths (default false, as Express by default).'),
      ambiguous: ambiguousSchema
        .optional()
        .describe("This route's stance on ambiguous spellings, over the gateway's `paths.ambiguous`."),
    })
    .default({ path: '/*', caseSensitive: false, strictTrailingSlash: false })
    .describe('Which requests the route takes; routes are tried in order, and the first that matches takes it.'),
  upstream: z
    .url({ protocol: /^https?$/, error: 'an http:// or https:// URL such as http://127.0.0.1:3000' })
    .describe('Where matched requests are forwarded: an http:// or https:// URL.'),
  rules: z
    .array(ruleSchema)
    .default([])
    .describe("The route's rate limits, each deciding every request the route takes (default none)."),
  ...protectionFields,
  routeTier: name
    .optional()
    .describe(
      "The priority tier of every request on this route (a tier name of the route's or its upstream's priority), instead of the header's.",
    ),
});

/**
 * storeTimeoutSchema is a Redis store's `timeoutMs`: a fixed number of ms, or the library's
 * adaptive timeout `{ floorMs, p99Multiple, capMs }` (each optional: 25, 3, 250).
 */
export const storeTimeoutSchema = z.union(
  [
    positive,
    z.strictObject({
      floorMs: positive.optional().describe('The shortest the adaptive timeout gets, in ms (default 25).'),
      p99Multiple: positive
        .optional()
        .describe("The timeout as a multiple of the recent p99 of Redis's answers (default 3)."),
      capMs: positive
        .optional()
        .describe('The longest the adaptive timeout gets, in ms, and the timeout before any answer (default 250).'),
    }),
  ],
  {
    error:
      'expected a number of ms above 0, or an adaptive timeout { floorMs, p99Multiple, capMs } (each a number above 0)',
  },
);

/**
 * storeOnErrorSchema is a Redis store's `onError`: `local` (the library's bounded local fallback,
 * each gateway's share of a limit from the gateways seen on Redis), `{ fallback: local, nodes: n }`
 * or `{ fallback: local, share: s }` to state the share, `fail-open` or `fail-closed`.
 */
export const storeOnErrorSchema = z.union(
  [
    z.enum(['local', 'fail-open', 'fail-closed']),
    z.strictObject({
      fallback: z.literal('local'),
      nodes: whole
        .positive()
        .optional()
        .describe(
          'How many gateways share the limits: each admits 1/nodes of a limit while Redis is away (omitted: counted from the gateways seen on Redis).',
        ),
      share: z
        .number()
        .positive()
        .max(1)
        .optional()
        .describe(
          'The share of a limit this gateway admits while Redis is away, above 0 and at most 1; not with nodes.',
        ),
    }),
  ],
  {
    error:
      'expected local, fail-open, fail-closed, or { fallback: local } with nodes (a whole number of gateways, at least 1) or share (above 0, at most 1)',
  },
);

/** storeSchema is where limiter state lives: this process's memory, or Redis shared by many gateways. */
export const storeSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('memory'),
    maxKeys: whole
      .positive()
      .optional()
      .describe(
        'Most keys held (default 1,000,000); beyond, a new key is decided by a sketch that can only over-count.',
      ),
  }),
  z.strictObject({
    type: z.literal('redis'),
    url: z
      .string()
      .regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
      .optional()
      .describe('One Redis server, redis:// or rediss:// (TLS); not with nodes.'),
    nodes: z
      .array(z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL'))
      .min(1)
      .optional()
      .describe('Redis Cluster nodes to start from, redis:// or rediss:// URLs; not with url.'),
    passwordEnv: z
      .string()
      .min(1)
      .optional()
      .describe('The name of the environment variable holding the Redis password (it must be set).'),
    timeoutMs: storeTimeoutSchema
      .optional()
      .describe(
        "How long a decision may wait for Redis: a fixed number of ms, or adaptive (omitted: the library's adaptive default, 3 × the recent p99 between 25 and 250 ms).",
      ),
    onError: storeOnErrorSchema
      .default('local')
      .describe('What a Redis failure answers: the bounded local fallback (default), fail-open or fail-closed.'),
    writeBack: z
      .boolean()
      .default(true)
      .describe(
        'Whether what the failure policy admitted during an outage is charged to Redis when it answers again (default true).',
      ),
    prefix: z
      .string()
      .regex(/^[^{}]*$/, 'no { or }')
      .optional()
      .describe('What every key the gateway writes to Redis starts with (default `floodgate:`).'),
  }),
]);

const listener = z.strictObject({
  host: z.string().default('127.0.0.1').describe('The address to listen on (default 127.0.0.1).'),
  port: whole.min(0).max(65535).describe('The port to listen on (0 for any free port).'),
});

/**
 * rateLimitServiceSchema is the decision service `floodgate serve` runs beside the routes: Envoy's
 * `RateLimitService` over gRPC and the JSON API over HTTP, on the gateway's store, for the domains
 * of Envoy descriptor files (paths relative to this config file).
 */
export const rateLimitServiceSchema = z.strictObject({
  grpc: listener.optional().describe("Envoy's `envoy.service.ratelimit.v3.RateLimitService` and gRPC health checks."),
  http: listener.optional().describe('The JSON API: `POST /json`, `POST /v1/decide`, `GET /healthcheck`.'),
  descriptors: z
    .array(z.string().min(1))
    .min(1, 'name at least one Envoy descriptor file')
    .describe("Envoy descriptor config files (envoyproxy/ratelimit's format), relative to this file."),
  /** The headers asked of Envoy: draft (the default), off, ratelimit, x-ratelimit, or `{ limit, remaining, reset }` names. */
  responseHeaders: z
    .union([
      z.enum(['draft', 'off', 'ratelimit', 'x-ratelimit']),
      z.strictObject({
        limit: z.string().min(1).describe('The name of the header carrying the limit.'),
        remaining: z.string().min(1).describe('The name of the header carrying what remains of it.'),
        reset: z.string().min(1).describe('The name of the header carrying the seconds until it resets.'),
      }),
    ])
    .optional()
    .describe(
      "The headers asked of Envoy: draft (the default, the IETF draft's), off, ratelimit, x-ratelimit, or your own `{ limit, remaining, reset }` names.",
    ),
  shadowMode: z
    .boolean()
    .optional()
    .describe("Every limit in shadow mode (envoyproxy/ratelimit's SHADOW_MODE): decided and counted, never refusing."),
  tracing: z
    .boolean()
    .optional()
    .describe("An OpenTelemetry span per ShouldRateLimit, sent where the process's OpenTelemetry SDK sends them."),
  /**
   * When the service's health (gRPC health, `/healthcheck`) says NOT_SERVING while the gateway's
   * store is away: `auto` (the default) only when the store's `onError` is `fail-closed`, so every
   * decision would refuse; `always`; `never`.
   */
  healthFollowsStore: z
    .enum(['auto', 'always', 'never'])
    .optional()
    .describe(
      'When health says NOT_SERVING while the store is away: auto (default) only under onError fail-closed, always, or never.',
    ),
});

/** configSchema is the whole file. */
export const configSchema = z.strictObject({
  listen: listenSchema
    .default({ host: '127.0.0.1', port: 8080 })
    .describe('The traffic port: where requests arrive, and whether it terminates TLS and speaks HTTP/2.'),
  admin: z
    .strictObject({
      host: z.string().default('127.0.0.1').describe('The address the admin port listens on.'),
      port: whole
        .min(0)
        .max(65535)
        .default(9090)
        .describe('The admin port (health, readiness, metrics, admin API, dashboard).'),
      token: z
        .string()
        .min(16, 'an admin token needs at least 16 characters')
        .optional()
        .describe('The bearer token of the admin API and dashboard (prefer `tokenEnv`).'),
      tokenEnv: z.string().min(1).optional().describe('The name of the environment variable holding the admin token.'),
      /** The live dashboard at /dashboard (on when there is a token); `keys` shows keys in full, truncated or as a keyed hash. */
      dashboard: z
        .strictObject({
          enabled: z.boolean().default(true).describe('Whether /dashboard is served (it needs a token).'),
          keys: z
            .enum(['full', 'truncate', 'hash'])
            .default('full')
            .describe('How the dashboard shows keys: in full, truncated, or as a keyed hash.'),
        })
        .optional()
        .describe('The live dashboard at /dashboard (on when there is a token).'),
    })
    .optional()
    .describe('The admin port: health, readiness, metrics, the admin API and the dashboard.'),
  store: storeSchema
    .default({ type: 'memory' })
    .describe("Where the limits' counts live: this process's memory, or Redis shared by every gateway."),
  paths: pathsSchema
    .default({ ambiguous: 'reject' })
    .describe(
      'How request paths are read: the stance on ambiguous spellings (`%2F`, `;` parameters, `\\\\`, `%00`, ...).',
    ),
  trustProxy: z
    .union([z.literal(false), whole.nonnegative(), z.array(z.string().min(1))])
    .default(false)
    .describe(
      "Whose forwarding headers are believed for the client's address: false (none), a hop count, or a list of proxy addresses and CIDR ranges.",
    ),
  forwardedHeader: z
    .enum(['x-forwarded-for', 'forwarded'])
    .default('x-forwarded-for')
    .describe(
      "The header trusted proxies write the client's address in: `x-forwarded-for` (the default) or RFC 7239 `forwarded`.",
    ),
  limits: z
    .strictObject({
      maxHeaderBytes: whole
        .min(1024)
        .default(16_384)
        .describe(
          "The most bytes a request's head may take (431 above), counted as node's parser counts them: the target, and each header's name and value; not the separators and line ends (4 bytes a field), nor HTTP/2's 32 bytes a field.",
        ),
      maxBodyBytes: whole.nonnegative().default(10_485_760).describe('The largest request body forwarded (413 above).'),
      headersTimeoutMs: positive
        .default(10_000)
        .describe("How long a client may take to send a request's headers (408 after)."),
      requestTimeoutMs: positive.default(30_000).describe('How long a client may take to send a whole request.'),
      upstreamTimeoutMs: positive
        .default(30_000)
        .describe(
          "How long the upstream may take to send its answer's headers (504 after, to the millisecond), and between its body's chunks (to about half a second: the answer has begun, so the connection is cut).",
        ),
      connectTimeoutMs: positive.default(5_000).describe('How long connecting to the upstream may take.'),
    })
    .default({
      maxHeaderBytes: 16_384,
      maxBodyBytes: 10_485_760,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      upstreamTimeoutMs: 30_000,
      connectTimeoutMs: 5_000,
    })
    .describe("Bounds on a request's size and on how long each side of an exchange may take."),
  /**
   * How many processes serve the traffic port: 1 (the default) runs the gateway in this process;
   * more, or `auto` (one a core), runs a primary that forks that many workers sharing the one
   * listener, with one limit for the host (see docs/workers.md). Read at start.
   */
  workers: z
    .union([whole.min(1).max(256), z.literal('auto')])
    .default(1)
    .describe(
      "How many worker processes serve the traffic port, sharing one listener and, on the memory store, one limit for the host (leases from the primary): a number from 1 to 256, or 'auto' for one a core. Read at start; see docs/workers.md.",
    ),
  /**
   * What SIGTERM does: unready at once, then `drainMs` (default 5,000; 0: none) still serving new
   * connections while load balancers see `/readyz` answer 503, then the listener closes and
   * requests in flight finish. Read at shutdown, so a reload changes it.
   */
  shutdown: z
    .strictObject({
      drainMs: whole
        .nonnegative()
        .default(5_000)
        .describe('How long the listener stays open and serving once unready on SIGTERM, in ms (0: closes at once).'),
    })
    .default({ drainMs: 5_000 })
    .describe(
      'What SIGTERM does: unready at once, serving for drainMs, then the listener closes and requests in flight finish.',
    ),
  keys: z
    .strictObject({
      hash: z
        .boolean()
        .default(true)
        .describe(
          "Whether identity values and the decision service's descriptor values are hashed in store keys (false: raw values).",
        ),
      secret: z
        .string()
        .min(16, 'a key-hashing secret needs at least 16 characters')
        .optional()
        .describe('The hashing secret itself (prefer secretEnv).'),
      secretEnv: z
        .string()
        .min(1)
        .optional()
        .describe(
          'The environment variable holding the hashing secret (16 characters or more), the same on every gateway sharing the store.',
        ),
    })
    .default({ hash: true })
    .describe(
      "How identity values (API keys, JWT claims, query tokens, and the decision service's descriptor values) become store key names: HMAC-SHA-256 under the secret by default, so Redis, metrics and the dashboard never see them; the routes' client addresses are not hashed. A restart setting: a change renames those keys.",
    ),
  accessLog: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe('Whether lines are written (default true once the section is there).'),
      sample: z.number().min(0).max(1).default(1).describe('The share of exchanges logged, 0 to 1.'),
      destination: z.string().min(1).default('stdout').describe('stdout, or the path of a file to append to.'),
    })
    .optional()
    .describe(
      'The access log: one JSON line per exchange (method, path, route, rules, decision, status, upstream status, duration, store key, bytes). Off without this section; a restart setting.',
    ),
  routes: z
    .array(routeSchema)
    .default([])
    .describe('The routes to proxy; a config needs routes, a rateLimitService, or both.'),
  upstreams: z
    .array(upstreamSchema)
    .default([])
    .describe(
      "Overload protection shared by every route forwarding to an origin (a route's own sections are checked first).",
    ),
  rateLimitService: rateLimitServiceSchema
    .optional()
    .describe(
      "The decision service beside the routes: Envoy's RateLimitService over gRPC and a JSON API over HTTP, on the gateway's store.",
    ),
});

/** GatewayConfig is a checked config file with its defaults filled in. */
export type GatewayConfig = z.output<typeof configSchema>;
/** RouteConfig is one checked route. */
export type RouteConfig = GatewayConfig['routes'][number];
/** RuleConfig is one checked rule. */
export type RuleConfig = RouteConfig['rules'][number];
/** PolicyConfig is one checked policy. */
export type PolicyConfig = RuleConfig['policy'];
/** KeyConfig is one checked identity. */
export type KeyConfig = RuleConfig['key'];
/** RateLimitServiceConfig is the checked rateLimitService section. */
export type RateLimitServiceConfig = NonNullable<GatewayConfig['rateLimitService']>;
/** StoreConfig is the checked store. */
export type StoreConfig = GatewayConfig['store'];

/** jsonSchema returns the config's JSON Schema (draft 2020-12), for editors. */
export function jsonSchema(): unknown {
  return z.toJSONSchema(configSchema, { io: 'input' });
}
