/**
 * The service scenario: open-loop traffic through each protection (none, a fixed or an adaptive
 * concurrency limit) into an identical copy of one upstream service. Every field is plain data
 * (JSON or YAML); {@link parseServiceScenario} checks one and fills in defaults.
 */
import type { AdaptiveLimitOptions } from 'floodgate';
import type { TrafficSpec } from '../scenario.js';

/**
 * ServiceTimeSpec is how long the service works on one call, in ms: always `meanMs`
 * (`constant`), exponential with mean `meanMs`, or lognormal with mean `meanMs` whose 99th
 * percentile is `p99Ms`. Draws are seeded: the same call takes the same time in every lane.
 */
export type ServiceTimeSpec =
  | { readonly distribution: 'constant'; readonly meanMs: number }
  | { readonly distribution: 'exponential'; readonly meanMs: number }
  | { readonly distribution: 'lognormal'; readonly meanMs: number; readonly p99Ms: number };

/** CapacityStep changes the service from `atMs` on: its slots, its service time, or both. */
export interface CapacityStep {
  readonly atMs: number;
  readonly slots: number | undefined;
  readonly serviceMs: ServiceTimeSpec | undefined;
}

/**
 * RetrySpec makes a client try again after a shed or a timeout, at most `max` times: retry `k`
 * (from 1) waits `backoffMs × multiplier^(k-1)`, less up to `jitterRatio` of it at random.
 */
export interface RetrySpec {
  readonly max: number;
  readonly backoffMs: number;
  readonly multiplier: number;
  readonly jitterRatio: number;
}

/** TierSpec is one priority tier of the traffic: `share` of the calls (tier 0 is the most important). */
export interface TierSpec {
  readonly name: string;
  readonly share: number;
}

/** ServiceSpec is the upstream and its clients. */
export interface ServiceSpec {
  /** Calls the service works on at once; more wait in its unbounded FIFO queue. */
  readonly slots: number;
  readonly serviceMs: ServiceTimeSpec;
  /** Changes of slots or service time, in time order. */
  readonly capacity: readonly CapacityStep[];
  /** How long a client waits for an answer, in ms; the service never learns that it left. */
  readonly timeoutMs: number;
  readonly retries: RetrySpec | undefined;
  /** The traffic's priority tiers (one tier, `all`, when none are given); shares add up to 1. */
  readonly tiers: readonly TierSpec[];
}

/** AdaptiveSpec holds the options of the library's `AdaptiveLimit` that a scenario may set: all but a `queueTarget` function. */
export type AdaptiveSpec = Omit<AdaptiveLimitOptions, 'queueTarget'> & { readonly queueTarget?: number };

/** Protection is what stands between the clients and the service in one lane. */
export type Protection =
  | { readonly type: 'none' }
  | { readonly type: 'concurrency'; readonly limit: number }
  | { readonly type: 'adaptive'; readonly options: AdaptiveSpec };

/** ProtectionLaneSpec is one lane: a protection, and whether it tells the traffic's tiers apart. */
export interface ProtectionLaneSpec {
  /** The lane's label in charts and summaries (unique). */
  readonly name: string;
  readonly protection: Protection;
  /** Set when the limiter serves the traffic's tiers by priority: its `reserveRatio` (undefined: the library's default). */
  readonly tiers: { readonly reserveRatio: number | undefined } | undefined;
}

/** ServiceScenario is a whole service simulation, checked and with its defaults filled in. */
export interface ServiceScenario {
  readonly seed: number;
  readonly durationMs: number;
  readonly bucketMs: number;
  readonly traffic: readonly TrafficSpec[];
  readonly service: ServiceSpec;
  readonly protections: readonly ProtectionLaneSpec[];
}
