/**
 * From a checked protection section to the library's options: one place, used both by the checks
 * (which build the library's objects to hear what they refuse) and by the gateway.
 */
import type { CircuitBreakerOptions, ConcurrencyLimiterOptions } from 'floodgate';
import type { CircuitBreakerConfig, ProtectionConfig } from './overload-schema.js';

/** The library's adaptive defaults, named in the checks' messages. */
export const ADAPTIVE_DEFAULTS = Object.freeze({ minLimit: 2, maxLimit: 1000, initialLimit: 20 });

/**
 * limiterOptionsOf returns the `ConcurrencyLimiter` options of a section, or undefined when it has
 * neither `concurrency` nor `adaptive` (nothing to limit). With both, `concurrency` wins: the
 * checks report that as a mistake first.
 */
export function limiterOptionsOf(section: ProtectionConfig): ConcurrencyLimiterOptions | undefined {
  const tiers = section.priority?.tiers.length ?? 1;
  const reserve = section.priority?.reserveRatio;
  const shared = { tiers, ...(reserve === undefined ? {} : { reserveRatio: reserve }) };
  if (section.concurrency !== undefined) {
    const { limit, maxQueue, maxWaitMs, order, codel } = section.concurrency;
    return { limit, maxQueue, maxWaitMs, ...waitOrder(order, codel), ...shared };
  }
  if (section.adaptive === undefined) return undefined;
  const { maxQueue, maxWaitMs, order, codel, ...estimator } = section.adaptive;
  return { adaptive: estimator, maxQueue, maxWaitMs, ...waitOrder(order, codel), ...shared };
}

/** The wait line's order and CoDel's parameters, only where the section gives them (the library's defaults otherwise). */
function waitOrder(
  order: ConcurrencyLimiterOptions['order'],
  codel: ConcurrencyLimiterOptions['codel'],
): Pick<ConcurrencyLimiterOptions, 'order' | 'codel'> {
  return { ...(order === undefined ? {} : { order }), ...(codel === undefined ? {} : { codel }) };
}

/**
 * limiterSignature returns what decides a section's limiter: two sections with the same signature
 * (in the same scope) can share one limiter across a reload. The priority's header and default
 * tier are read per request, so they are not part of it.
 */
export function limiterSignature(scope: string, section: ProtectionConfig): string {
  return JSON.stringify([
    scope,
    section.concurrency,
    section.adaptive,
    section.priority?.tiers.length ?? 1,
    section.priority?.reserveRatio,
  ]);
}

/**
 * breakerOptionsOf returns the `CircuitBreaker` options of a circuitBreaker section, named `name`
 * in its events. The window is kept in up to 10 buckets of whole ms (the most that divide it), so
 * any whole `windowMs` is accepted.
 */
export function breakerOptionsOf(section: CircuitBreakerConfig, name: string): CircuitBreakerOptions {
  let buckets = Math.min(10, section.windowMs);
  while (section.windowMs % buckets !== 0) buckets--;
  return {
    trigger: section.trigger,
    windowMs: section.windowMs,
    buckets,
    minCalls: section.minCalls,
    openMs: section.openMs,
    halfOpenProbes: section.halfOpenProbes,
    name,
  };
}

/** breakerSignature returns what decides a scope's circuit breaker, to keep it across a reload when unchanged. */
export function breakerSignature(scope: string, section: CircuitBreakerConfig): string {
  return JSON.stringify([scope, section]);
}
