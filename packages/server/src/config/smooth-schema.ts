/**
 * The smooth policies of a queue-mode rule: Guava's SmoothBursty and SmoothWarmingUp, pacing every
 * request of the rule (on Redis, of every gateway process) at an even rate instead of counting
 * them in windows.
 */
import { z } from 'zod';

const positive = z.number().positive();

/**
 * smoothPolicySchemas are the two smooth policies, each chosen by `algorithm` like the counted
 * ones: `smoothBursty` stores up to `maxBurstSeconds` (default 1) of unused permits, Guava's
 * `RateLimiter.create(permitsPerSecond)`; `smoothWarmingUp` starts cold and reaches its rate
 * over `warmupMs` of steady demand, a cold permit costing `coldFactor` (default 3) intervals.
 */
export const smoothPolicySchemas = [
  z.strictObject({
    algorithm: z.literal('smoothBursty'),
    permitsPerSecond: positive,
    maxBurstSeconds: z.number().nonnegative().optional(),
  }),
  z.strictObject({
    algorithm: z.literal('smoothWarmingUp'),
    permitsPerSecond: positive,
    warmupMs: positive,
    coldFactor: z.number().min(1).optional(),
  }),
] as const;

/** SmoothPolicyConfig is one checked smooth policy. */
export type SmoothPolicyConfig = z.output<(typeof smoothPolicySchemas)[number]>;

/** isSmoothPolicy returns whether a checked policy is one of the smooth ones (a rule that paces rather than counts). */
export function isSmoothPolicy(policy: { readonly algorithm: string }): policy is SmoothPolicyConfig {
  return policy.algorithm === 'smoothBursty' || policy.algorithm === 'smoothWarmingUp';
}
