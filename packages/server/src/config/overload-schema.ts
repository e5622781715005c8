/**
 * The config's overload protection sections, shared by a route and a top-level `upstreams` entry:
 * a concurrency limit (fixed or adaptive), a circuit breaker, priority tiers and the shed status.
 * What no schema can say (both limits at once, a minimum above a maximum, a default tier that names
 * nothing) is checked in `overload-checks.ts`.
 */
import { z } from 'zod';

const positive = z.number().positive();
const whole = z.number().int();
const name = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a name is 1-64 of A-Z a-z 0-9 _ . -');
const ratio = z.number().positive().max(1);

/**
 * The wait line's order, shared by both limits: `adaptive-lifo` (default) serves first in, first
 * out until a queue stands for `codel.intervalMs`, then the newest first, shedding waiters older
 * than `codel.targetMs` (CoDel's adaptive LIFO); `fifo` always serves the oldest.
 */
const waitLine = {
  order: z.enum(['adaptive-lifo', 'fifo']).optional(),
  /** CoDel's parameters for `adaptive-lifo`, in ms (default interval 100, target 5). */
  codel: z.strictObject({ intervalMs: positive.optional(), targetMs: positive.optional() }).optional(),
};

/** concurrencySchema is a static bulkhead: at most `limit` requests in flight to what it guards. */
export const concurrencySchema = z.strictObject({
  /** Most requests in flight at once. */
  limit: whole.positive(),
  /** Most requests waiting for a slot (default 0: shed at once when every slot is taken). */
  maxQueue: whole.nonnegative().default(0),
  /** Longest wait for a slot, in ms (default 1000). */
  maxWaitMs: positive.default(1000),
  ...waitLine,
});

/** adaptiveSchema is a concurrency limit learned from the upstream's latency and drops (the library's `AdaptiveLimit`). */
export const adaptiveSchema = z.strictObject({
  /** The limit before anything is learned (default 20, within minLimit and maxLimit). */
  initialLimit: whole.positive().optional(),
  /** The floor (default 2). */
  minLimit: whole.positive().optional(),
  /** The ceiling (default 1000). */
  maxLimit: whole.positive().optional(),
  /** The shortest sample window, in ms (default 100). */
  windowMs: positive.optional(),
  /** Requests allowed to wait in the upstream's own queue at equilibrium (default √limit). */
  queueTarget: z.number().nonnegative().optional(),
  /** Longest time between two probes of the upstream's unloaded latency, in ms (default 10,000). */
  probeIntervalMs: positive.optional(),
  /** Most requests waiting for a slot (default 0: shed at once). */
  maxQueue: whole.nonnegative().default(0),
  /** Longest wait for a slot, in ms (default 1000). */
  maxWaitMs: positive.default(1000),
  ...waitLine,
});

/** triggerSchema is what opens a circuit, judged over the breaker's window. */
export const triggerSchema = z.discriminatedUnion('type', [
  /** At least `ratio` of the calls took more than `slowCallMs`. */
  z.strictObject({ type: z.literal('slowCallRatio'), slowCallMs: positive, ratio }),
  /** At least `ratio` of the calls failed (a 5xx, a timeout, a refused connection). */
  z.strictObject({ type: z.literal('errorRatio'), ratio }),
  /** At least `count` calls failed. */
  z.strictObject({ type: z.literal('errorCount'), count: whole.positive() }),
  /** The last `count` calls failed, whatever the window. */
  z.strictObject({ type: z.literal('consecutiveFailures'), count: whole.positive() }),
]);

/** circuitBreakerSchema stops forwarding to a failing upstream for `openMs`, then probes it. */
export const circuitBreakerSchema = z.strictObject({
  trigger: triggerSchema,
  /** How far back the trigger looks, in whole ms (default 10,000). */
  windowMs: whole.positive().default(10_000),
  /** Fewest calls in the window before a ratio or count trigger may open it (default 5). */
  minCalls: whole.nonnegative().default(5),
  /** How long it stays open before a probe, in ms (default 5000). */
  openMs: positive.default(5_000),
  /** Probes let through half-open; all must succeed to close it (default 1). */
  halfOpenProbes: whole.positive().default(1),
});

/** prioritySchema names the priority tiers of a concurrency limit, most important first, and where a request says its tier. */
export const prioritySchema = z.strictObject({
  /** Tier names, most important first. */
  tiers: z.array(name).min(1, 'name at least one tier'),
  /** The request header whose value names a tier (default x-priority). */
  header: z
    .string()
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name such as x-priority')
    .default('x-priority'),
  /** The tier of a request without the header or with an unknown value (default the last, least important, tier). */
  default: name.optional(),
  /** Share of the limit held back from each tier below the top, per step down (default 0.1). */
  reserveRatio: z.number().nonnegative().optional(),
});

/** shedSchema is how a request refused for overload is answered. */
export const shedSchema = z.strictObject({
  /** 503 (default) or 429. */
  status: z.literal([503, 429]).default(503),
});

/** protectionFields are the overload sections a route and an `upstreams` entry share. */
export const protectionFields = {
  /** A static bulkhead; not with `adaptive`. */
  concurrency: concurrencySchema.optional(),
  /** A learned concurrency limit; not with `concurrency`. */
  adaptive: adaptiveSchema.optional(),
  circuitBreaker: circuitBreakerSchema.optional(),
  priority: prioritySchema.optional(),
  shed: shedSchema.optional(),
};

/** upstreamSchema is protection shared by every route forwarding to one origin. */
export const upstreamSchema = z.strictObject({
  /** The origin, such as http://127.0.0.1:3000: every route whose upstream has this origin shares this protection. */
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL such as http://127.0.0.1:3000' }),
  /** The name metrics give it (default the origin). */
  name: name.optional(),
  ...protectionFields,
});

/** ProtectionConfig is the checked overload sections of one route or upstream. */
export type ProtectionConfig = z.output<z.ZodObject<typeof protectionFields>>;
/** UpstreamConfig is one checked `upstreams` entry. */
export type UpstreamConfig = z.output<typeof upstreamSchema>;
/** CircuitBreakerConfig is one checked circuitBreaker section. */
export type CircuitBreakerConfig = z.output<typeof circuitBreakerSchema>;
