/**
 * The observation seam: what limiters and stores report as they work, for metrics, logs and
 * dashboards. Nothing here decides anything; an observer sees, it never steers.
 */
import type { Decision } from './decision.js';

/** DecisionEvent is one decision a limiter made (by its policy, or by its store's failure policy). */
export interface DecisionEvent {
  /** The limiter's name (`LimiterOptions.name`, default its policy's name). */
  readonly limiter: string;
  /** The key decided; present only when the limiter was asked to report keys (`reportKeys`). */
  readonly key: string | undefined;
  /** The request's cost. */
  readonly cost: number;
  /** Whether the decision charged (`consume`) or only looked (`peek`). */
  readonly operation: 'consume' | 'peek';
  /** The decision itself; its `reason` says who decided (`ok`, `limit`, `fail-open`, ...). */
  readonly decision: Decision;
  /** When it was made, on the limiter's clock, in ms. */
  readonly atMs: number;
}

/** StoreCallEvent is one round trip to a store's backend (Redis), with its outcome and duration. */
export interface StoreCallEvent {
  /** The store's name, e.g. `redis`. */
  readonly store: string;
  /** What was asked, e.g. `consume`, `peek`, `refund`, `reset`, `reserve`, `consumeAll`, `batch`. */
  readonly operation: string;
  /** How long the round trip took, in ms (up to the deadline when it timed out). */
  readonly durationMs: number;
  /** Whether it answered in time with a usable reply. */
  readonly ok: boolean;
}

/** StoreErrorEvent is one failure of a store's backend, and the failure policy applied to it. */
export interface StoreErrorEvent {
  /** The store's name, e.g. `redis`. */
  readonly store: string;
  /** The typed error (`STORE_ERROR`, `STORE_TIMEOUT`, `STORE_REPLY`). */
  readonly error: Error;
  /** The failure policy that answered instead: `fail-open`, `fail-closed`, `fallback` or `throw`. */
  readonly policy: 'fail-open' | 'fail-closed' | 'fallback' | 'throw';
  /** When it happened, in ms. */
  readonly atMs: number;
}

/** CircuitEvent is a change of a store's circuit breaker (per Redis node on a cluster). */
export interface CircuitEvent {
  /** The store's name, e.g. `redis`. */
  readonly store: string;
  /** The node (`host:port`) whose circuit changed; undefined for a standalone server. */
  readonly node: string | undefined;
  /** `open`: requests are no longer sent; `half-open`: one probe is out; `closed`: healthy again. */
  readonly state: 'open' | 'half-open' | 'closed';
  /** When it changed, in ms. */
  readonly atMs: number;
}

/** FallbackEvent says that a store began or stopped deciding locally (the `local` failure policy). */
export interface FallbackEvent {
  /** The store's name, e.g. `redis`. */
  readonly store: string;
  /** True when the local fallback took over, false when the backend decides again. */
  readonly active: boolean;
  /** When it changed, in ms. */
  readonly atMs: number;
}

/** QueueEvent reports the depth of a waiting line (acquire queues, shaping queues) after it changed. */
export interface QueueEvent {
  /** The limiter's or queue's name. */
  readonly queue: string;
  /** The key whose line changed, when the line is per key and keys are reported. */
  readonly key: string | undefined;
  /** How many callers wait now. */
  readonly depth: number;
  /** When it changed, in ms. */
  readonly atMs: number;
}

/**
 * Observer receives floodgate's events; every hook is optional. Hooks are called synchronously,
 * after the fact: an observer that throws is ignored (the decision stands), so keep hooks cheap
 * and hand heavy work off. When no observer is given, nothing is built or called.
 *
 * @example
 * const observer: Observer = {
 *   decision: (e) => counter.inc({ limiter: e.limiter, outcome: e.decision.allowed ? 'admitted' : 'limited' }),
 *   storeError: (e) => log.warn({ err: e.error, policy: e.policy }, 'rate-limit store failed'),
 * };
 */
export interface Observer {
  /** decision receives each decision made. */
  decision?(event: DecisionEvent): void;
  /** storeCall receives each backend round trip, for latency and error rates. */
  storeCall?(event: StoreCallEvent): void;
  /** storeError receives each backend failure with the failure policy applied. */
  storeError?(event: StoreErrorEvent): void;
  /** circuit receives each circuit-breaker change. */
  circuit?(event: CircuitEvent): void;
  /** fallback receives each switch to and from the local fallback. */
  fallback?(event: FallbackEvent): void;
  /** queue receives each change of a waiting line's depth. */
  queue?(event: QueueEvent): void;
}

/** ObserverHook names one hook of an {@link Observer}. */
export type ObserverHook = keyof Observer;

/**
 * notify calls `observer[hook](event)` when both exist, and swallows what the hook throws: an
 * observer never changes a decision or breaks a store call.
 */
export function notify<H extends ObserverHook>(
  observer: Observer | undefined,
  hook: H,
  event: Parameters<NonNullable<Observer[H]>>[0],
): void {
  const fn = observer?.[hook] as ((e: typeof event) => void) | undefined;
  if (fn === undefined) return;
  try {
    fn.call(observer, event);
  } catch {
    // An observer's fault is its own; the decision stands.
  }
}

/** combineObservers returns one observer that hands every event to each of `observers` in turn. */
export function combineObservers(...observers: readonly Observer[]): Observer {
  const hooks: ObserverHook[] = ['decision', 'storeCall', 'storeError', 'circuit', 'fallback', 'queue'];
  const combined: Observer = {};
  for (const hook of hooks) {
    const present = observers.filter((o) => typeof o[hook] === 'function');
    if (present.length === 0) continue;
    (combined as Record<ObserverHook, (e: unknown) => void>)[hook] = (event: unknown) => {
      for (const o of present) notify(o, hook, event as never);
    };
  }
  return combined;
}
