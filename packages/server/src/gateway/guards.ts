/**
 * The overload guards of one config: per route and per `upstreams` entry, a concurrency limiter
 * and a circuit breaker, with the priority tiers and the answers they refuse with. A reload keeps
 * the limiter (and what it learned) and the breaker of every scope whose section did not change.
 */
import { CircuitBreaker, ConcurrencyLimiter, monotonicClock, type CircuitBreakerEvent } from 'floodgate';
import { FIELD, PROBLEM_CONTENT_TYPE, problemBody, type HeaderPair } from 'floodgate/http';
import { breakerOptionsOf, breakerSignature, limiterOptionsOf, limiterSignature } from '../config/overload.js';
import type { ProtectionConfig, UpstreamConfig } from '../config/overload-schema.js';
import type { GatewayConfig, RouteConfig } from '../config/schema.js';

/** RefusalReason is why a guard refused a request: a limiter's shed reason, or an open circuit. */
export type RefusalReason = 'limit' | 'queue-full' | 'queue-timeout' | 'aborted' | 'circuit-open';

/** Guard is the protection of one scope: a route's own, or an upstream's shared by its routes. */
export interface Guard {
  /** `route:<name>` or `upstream:<name>` (an upstream's name defaults to its origin). */
  readonly scope: string;
  readonly limiter: ConcurrencyLimiter | undefined;
  readonly breaker: CircuitBreaker | undefined;
  /** Whether a request may wait for a slot (maxQueue above 0): it then needs an abort signal. */
  readonly waits: boolean;
  /** The tier names, most important first (`default` alone without a priority section). */
  readonly tiers: readonly string[];
  /** The header naming a request's tier, or undefined without a priority section. */
  readonly header: string | undefined;
  /** Whether the header counts only from a trusted proxy (`headerFrom: trusted-proxies`). */
  readonly headerFromTrustedOnly: boolean;
  /** The tier of a request whose header names none. */
  readonly defaultTier: number;
  /** tierOf returns the tier a header value names, or the default. */
  tierOf(value: string | string[] | undefined): number;
  /** The acquire options of each tier, made once. */
  readonly acquireOptions: readonly { readonly tier: number }[];
  /** The status a shed request is answered with (503 or 429). */
  readonly shedStatus: number;
  /** The problem body of each refusal reason, made once. */
  readonly bodies: Readonly<Record<RefusalReason, string>>;
}

/** GuardStep is one guard on a route's way, with the route's fixed tier in it (its `routeTier`), if any. */
export interface GuardStep {
  readonly guard: Guard;
  readonly fixedTier: number | undefined;
}

/** GuardEvents hears what the guards do outside any request: a circuit changing state. */
export interface GuardEvents {
  circuitTransition(scope: string, to: string, reason: string): void;
}

const NO_EVENTS: GuardEvents = { circuitTransition: () => {} };

/** Guards holds the guards of one config and the steps of each route: its own guard first, then its upstream's. */
export class Guards {
  private constructor(
    /** Every guard, routes' then upstreams'. */
    readonly all: readonly Guard[],
    private readonly steps: ReadonlyMap<string, readonly GuardStep[]>,
    /** The limiters and breakers by signature, handed to the next config's guards on reload. */
    readonly kept: ReadonlyMap<string, ConcurrencyLimiter | CircuitBreaker>,
  ) {}

  /** build returns the guards of `config`, reusing from `previous` each limiter and breaker whose section is unchanged. */
  static build(config: GatewayConfig, previous: Guards | undefined, events: GuardEvents = NO_EVENTS): Guards {
    const kept = new Map<string, ConcurrencyLimiter | CircuitBreaker>();
    const ctx: BuildContext = { previous: previous?.kept, kept, events };
    const byOrigin = new Map<string, Guard>();
    const all: Guard[] = [];
    for (const upstream of config.upstreams) {
      const guard = compileGuard(`upstream:${upstream.name ?? new URL(upstream.url).origin}`, upstream, ctx);
      if (guard !== undefined) byOrigin.set(new URL(upstream.url).origin, guard);
    }
    const steps = new Map<string, readonly GuardStep[]>();
    for (const route of config.routes) {
      const own = compileGuard(`route:${route.name}`, route, ctx);
      if (own !== undefined) all.push(own);
      const shared = byOrigin.get(new URL(route.upstream).origin);
      const guards = [own, shared].filter((g) => g !== undefined);
      if (guards.length > 0)
        steps.set(
          route.name,
          guards.map((guard) => ({ guard, fixedTier: fixedTierOf(route, guard) })),
        );
    }
    all.push(...byOrigin.values());
    return new Guards(all, steps, kept);
  }

  /** stepsOf returns the guards a route's requests pass, or undefined when it has none (no cost per request). */
  stepsOf(route: RouteConfig): readonly GuardStep[] | undefined {
    return this.steps.get(route.name);
  }
}

interface BuildContext {
  readonly previous: ReadonlyMap<string, ConcurrencyLimiter | CircuitBreaker> | undefined;
  readonly kept: Map<string, ConcurrencyLimiter | CircuitBreaker>;
  readonly events: GuardEvents;
}

function compileGuard(scope: string, section: ProtectionConfig | UpstreamConfig, ctx: BuildContext): Guard | undefined {
  const limiter = limiterOf(scope, section, ctx);
  const breaker = breakerOf(scope, section, ctx);
  if (limiter === undefined && breaker === undefined) return undefined;
  const priority = section.priority;
  const tiers = priority?.tiers ?? ['default'];
  const index = new Map(tiers.map((t, i) => [t, i]));
  const defaultTier = priority?.default === undefined ? tiers.length - 1 : index.get(priority.default)!;
  const shedStatus = section.shed?.status ?? 503;
  const where = scope.startsWith('route:') ? 'this route' : 'the upstream';
  return {
    scope,
    limiter,
    breaker,
    waits: (section.concurrency?.maxQueue ?? section.adaptive?.maxQueue ?? 0) > 0,
    tiers,
    header: priority?.header,
    headerFromTrustedOnly: priority?.headerFrom === 'trusted-proxies',
    defaultTier,
    tierOf: (value) => (typeof value === 'string' ? (index.get(value) ?? defaultTier) : defaultTier),
    acquireOptions: tiers.map((_, tier) => Object.freeze({ tier })),
    shedStatus,
    bodies: {
      limit: overloadBody(shedStatus, `every slot ${where} may use is taken`),
      'queue-full': overloadBody(shedStatus, `the line of requests waiting for ${where} is full`),
      'queue-timeout': overloadBody(shedStatus, `no slot of ${where} came free in time`),
      aborted: overloadBody(shedStatus, 'the client left while waiting'),
      'circuit-open': overloadBody(503, `${where} is failing: its circuit breaker is open`, 'circuit-breaker'),
    },
  };
}

function limiterOf(scope: string, section: ProtectionConfig, ctx: BuildContext): ConcurrencyLimiter | undefined {
  const options = limiterOptionsOf(section);
  if (options === undefined) return undefined;
  const signature = limiterSignature(scope, section);
  const previous = ctx.previous?.get(signature);
  // Latency is measured on the monotonic clock: a step of the wall clock is not a slow call.
  const limiter =
    previous instanceof ConcurrencyLimiter ? previous : new ConcurrencyLimiter({ ...options, clock: monotonicClock });
  ctx.kept.set(signature, limiter);
  return limiter;
}

function breakerOf(scope: string, section: ProtectionConfig, ctx: BuildContext): CircuitBreaker | undefined {
  const config = section.circuitBreaker;
  if (config === undefined) return undefined;
  const signature = breakerSignature(scope, config);
  const previous = ctx.previous?.get(signature);
  // The events go to whoever built the breaker first: the gateway's one sink lives as long as the process.
  const events = ctx.events;
  const breaker =
    previous instanceof CircuitBreaker
      ? previous
      : new CircuitBreaker({
          ...breakerOptionsOf(config, scope),
          onStateChange: (e: CircuitBreakerEvent) => events.circuitTransition(scope, e.to, e.reason),
        });
  ctx.kept.set(signature, breaker);
  return breaker;
}

/** The tier a route pins for a guard (its `routeTier`, when that guard has such a tier). */
function fixedTierOf(route: RouteConfig, guard: Guard): number | undefined {
  if (route.routeTier === undefined) return undefined;
  const tier = guard.tiers.indexOf(route.routeTier);
  return tier < 0 ? undefined : tier;
}

/** A problem body shaped like the 429s', with the draft's reduced-capacity type and the status sent. */
function overloadBody(status: number, detail: string, policy = 'concurrency'): string {
  const body = JSON.parse(problemBody('temporary-reduced-capacity', [policy], detail)) as Record<string, unknown>;
  body.status = status;
  return JSON.stringify(body);
}

/** refusalHeaders returns the headers of an overload refusal: Retry-After in whole seconds, at least 1. */
export function refusalHeaders(retryAfterMs: number): HeaderPair[] {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return [
    [FIELD.cacheControl, 'no-store'],
    [FIELD.contentType, PROBLEM_CONTENT_TYPE],
    [FIELD.retryAfter, String(seconds)],
  ];
}
