/**
 * The config's overload protection sections, shared by a route and a top-level `upstreams` entry:
 * a concurrency limit (fixed or adaptive), a circuit breaker, priority tiers and the shed status.
 * What no schema can say (both limits at once, a minimum above a maximum, a default tier that names
 * nothing) is checked in `overload-checks.ts`.
 */
import * as z from 'zod';

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
  order: z
    .enum(['adaptive-lifo', 'fifo'])
    .optional()
    .describe(
      'The wait line: adaptive-lifo (default) turns newest-first once a queue stands for codel.intervalMs, shedding waiters older than codel.targetMs; fifo always serves the oldest.',
    ),
  codel: z
    .strictObject({
      intervalMs: positive
        .optional()
        .describe('How long a queue must stand before the line turns newest-first, in ms (default 100).'),
      targetMs: positive
        .optional()
        .describe('The wait past which waiters are shed while the line is newest-first, in ms (default 5).'),
    })
    .optional()
    .describe("CoDel's parameters for `adaptive-lifo`, in ms (default interval 100, target 5)."),
};

/** concurrencySchema is a static bulkhead: at most `limit` requests in flight to what it guards. */
export const concurrencySchema = z.strictObject({
  limit: whole.positive().describe('Most requests in flight at once.'),
  maxQueue: whole
    .nonnegative()
    .default(0)
    .describe('Most requests waiting for a slot (default 0: shed at once when every slot is taken).'),
  maxWaitMs: positive.default(1000).describe('Longest wait for a slot, in ms (default 1000).'),
  ...waitLine,
});

/** adaptiveSchema is a concurrency limit learned from the upstream's latency and drops (the library's `AdaptiveLimit`). */
export const adaptiveSchema = z.strictObject({
  initialLimit: whole
    .positive()
    .optional()
    .describe('The limit before anything is learned (default 20, within minLimit and maxLimit).'),
  minLimit: whole.positive().optional().describe('The floor (default 2).'),
  maxLimit: whole.positive().optional().describe('The ceiling (default 1000).'),
  windowMs: positive.optional().describe('The shortest sample window, in ms (default 100).'),
  queueTarget: z
    .number()
    .nonnegative()
    .optional()
    .describe(
      "Requests allowed to wait in the upstream's own queue at equilibrium (default: one plus twice the latency's noise, at most √limit; √limit with priority tiers).",
    ),
  probeIntervalMs: positive
    .optional()
    .describe("Longest time between two probes of the upstream's unloaded latency, in ms (default 10,000)."),
  maxQueue: whole.nonnegative().default(0).describe('Most requests waiting for a slot (default 0: shed at once).'),
  maxWaitMs: positive.default(1000).describe('Longest wait for a slot, in ms (default 1000).'),
  ...waitLine,
});

/** triggerSchema is what opens a circuit, judged over the breaker's window. */
export const triggerSchema = z.discriminatedUnion('type', [
  /** At least `ratio` of the calls took more than `slowCallMs`. */
  z.strictObject({
    type: z.literal('slowCallRatio'),
    slowCallMs: positive.describe('A call taking longer than this, in ms, is slow.'),
    ratio: ratio.describe("The share of the window's calls that, when slow, opens the circuit (above 0, at most 1)."),
  }),
  /** At least `ratio` of the calls failed (a 5xx, a timeout, a refused connection). */
  z.strictObject({
    type: z.literal('errorRatio'),
    ratio: ratio.describe(
      "The share of the window's calls that, when failed (5xx, timeout, refused connection), opens the circuit.",
    ),
  }),
  /** At least `count` calls failed. */
  z.strictObject({
    type: z.literal('errorCount'),
    count: whole.positive().describe('The failed calls in the window that open the circuit.'),
  }),
  /** The last `count` calls failed, whatever the window. */
  z.strictObject({
    type: z.literal('consecutiveFailures'),
    count: whole.positive().describe('The failed calls in a row, whatever the window, that open the circuit.'),
  }),
]);

/** circuitBreakerSchema stops forwarding to a failing upstream for `openMs`, then probes it. */
export const circuitBreakerSchema = z.strictObject({
  trigger: triggerSchema.describe(
    'What opens the circuit: slowCallRatio, errorRatio, errorCount (over the window) or consecutiveFailures.',
  ),
  windowMs: whole.positive().default(10_000).describe('How far back the trigger looks, in whole ms (default 10,000).'),
  minCalls: whole
    .nonnegative()
    .default(5)
    .describe('Fewest calls in the window before a ratio or count trigger may open it (default 5).'),
  openMs: positive.default(5_000).describe('How long it stays open before a probe, in ms (default 5000).'),
  halfOpenProbes: whole
    .positive()
    .default(1)
    .describe('Probes let through half-open; all must succeed to close it (default 1).'),
});

/** prioritySchema names the priority tiers of a concurrency limit, most important first, and where a request says its tier. */
export const prioritySchema = z.strictObject({
  tiers: z.array(name).min(1, 'name at least one tier').describe('Tier names, most important first.'),
  /** The request header whose value names a tier (default x-priority). */
  header: z
    .string()
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name such as x-priority')
    .default('x-priority'),
  headerFrom: z
    .enum(['trusted-proxies', 'anyone'])
    .optional()
    .describe(
      "Whose header is believed: trusted-proxies (only from trustProxy peers, as Envoy believes its x-envoy-* headers only from internal addresses; others get the default tier) or anyone (an edge in front sets or strips it). Unset, anyone's, with a warning: any client can claim the top tier.",
    ),
  default: name
    .optional()
    .describe(
      'The tier of a request without the header or with an unknown value (default the last, least important, tier).',
    ),
  reserveRatio: z
    .number()
    .nonnegative()
    .optional()
    .describe('Share of the limit held back from each tier below the top, per step down (default 0.15).'),
});

/** shedSchema is how a request refused for overload is answered. */
export const shedSchema = z.strictObject({
  status: z.literal([503, 429]).default(503).describe('503 (default) or 429.'),
});

/** protectionFields are the overload sections a route and an `upstreams` entry share. */
export const protectionFields = {
  concurrency: concurrencySchema.optional().describe('A static bulkhead; not with `adaptive`.'),
  adaptive: adaptiveSchema.optional().describe('A learned concurrency limit; not with `concurrency`.'),
  circuitBreaker: circuitBreakerSchema
    .optional()
    .describe('Stops forwarding to a failing upstream for openMs, then lets probes through.'),
  priority: prioritySchema
    .optional()
    .describe(
      "Priority tiers sharing the concurrency limit, most important first, and the header naming a request's tier.",
    ),
  shed: shedSchema.optional().describe('How a request refused for overload is answered (default 503).'),
};

/** upstreamSchema is protection shared by every route forwarding to one origin. */
export const upstreamSchema = z.strictObject({
  url: z
    .url({ protocol: /^https?$/, error: 'an http:// or https:// URL such as http://127.0.0.1:3000' })
    .describe(
      'The origin, such as http://127.0.0.1:3000: every route whose upstream has this origin shares this protection.',
    ),
  name: name.optional().describe('The name metrics give it (default the origin).'),
  ...protectionFields,
});

/** ProtectionConfig is the checked overload sections of one route or upstream. */
export type ProtectionConfig = z.output<z.ZodObject<typeof protectionFields>>;
/** UpstreamConfig is one checked `upstreams` entry. */
export type UpstreamConfig = z.output<typeof upstreamSchema>;
/** CircuitBreakerConfig is one checked circuitBreaker section. */
export type CircuitBreakerConfig = z.output<typeof circuitBreakerSchema>;
