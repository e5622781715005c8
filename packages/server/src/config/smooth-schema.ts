/**
 * The smooth policies of a queue-mode rule: Guava's SmoothBursty and SmoothWarmingUp, pacing every
 * request of the rule (on Redis, of every gateway process) at an even rate instead of counting
 * them in windows.
 */
import * as z from 'zod';

const positive = z.number().positive();
const permitsPerSecond = positive.describe('The steady rate requests are paced at, per second.');

/**
 * smoothPolicySchemas are the two smooth policies, each chosen by `algorithm` like the counted
 * ones: `smoothBursty` stores up to `maxBurstSeconds` (default 1) of unused permits, Guava's
 * `RateLimiter.create(permitsPerSecond)`; `smoothWarmingUp` starts cold and reaches its rate
 * over `warmupMs` of steady demand, a cold permit costing `coldFactor` (default 3) intervals.
 */
export const smoothPolicySchemas = [
  z.strictObject({
    algorithm: z.literal('smoothBursty'),
    permitsPerSecond: permitsPerSecond,
    maxBurstSeconds: z
      .number()
      .nonnegative()
      .optional()
      .describe('How many seconds of unused permits are stored for a burst (default 1).'),
  }),
  z.strictObject({
    algorithm: z.literal('smoothWarmingUp'),
    permitsPerSecond: permitsPerSecond,
    warmupMs: positive.describe('How long steady demand takes to bring a cold limiter to its rate, in ms.'),
    coldFactor: z
      .number()
      .min(1)
      .optional()
      .describe('How many stable intervals a permit costs when fully cold (default 3).'),
  }),
] as const;

/** SmoothPolicyConfig is one checked smooth policy. */
export type SmoothPolicyConfig = z.output<(typeof smoothPolicySchemas)[number]>;

/** isSmoothPolicy returns whether a checked policy is one of the smooth ones (a rule that paces rather than counts). */
export function isSmoothPolicy(policy: { readonly algorithm: string }): policy is SmoothPolicyConfig {
  return policy.algorithm === 'smoothBursty' || policy.algorithm === 'smoothWarmingUp';
}
