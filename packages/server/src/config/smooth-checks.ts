/**
 * The checks of a rule with a smooth policy that the schema cannot express: it waits requests in
 * turn (queue mode), paces the route as a whole, reserves whole permits, and has numbers the
 * library's smooth limiter accepts.
 */
import { FloodgateError, SmoothRateLimiter } from 'floodgate';
import type { ConfigPath, ConfigProblem, Locator } from './problems.js';
import type { RuleConfig } from './schema.js';
import type { SmoothPolicyConfig } from './smooth-schema.js';

/** checkSmoothRule returns the problems of `rule`, whose policy is `policy` (a smooth one), at `rp`. */
export function checkSmoothRule(
  rule: RuleConfig,
  policy: SmoothPolicyConfig,
  rp: ConfigPath,
  at: Locator,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (rule.mode !== 'queue')
    problems.push(
      at.problem(
        [...rp, 'mode'],
        `a ${policy.algorithm} policy paces requests, each waiting its turn, so it needs mode: queue (the rule's mode is "${rule.mode}")`,
        'set mode: queue (and queue: { maxWaitMs } for the longest wait), or choose a counting algorithm such as tokenBucket',
      ),
    );
  if (rule.key.type !== 'route')
    problems.push(
      at.problem(
        [...rp, 'key'],
        `a ${policy.algorithm} policy paces the route as a whole (every gateway process on the store together), not each ${rule.key.type} apart`,
        'set key: { type: route }',
      ),
    );
  if (!Number.isSafeInteger(rule.cost) || rule.cost < 1)
    problems.push(
      at.problem(
        [...rp, 'cost'],
        `a ${policy.algorithm} policy reserves whole permits, so a cost of ${rule.cost} cannot be reserved`,
        'use a whole number of at least 1 (the default is 1)',
      ),
    );
  const refused = refusedNumber(policy);
  if (refused !== undefined)
    problems.push(
      at.problem(
        refused.option === undefined ? [...rp, 'policy'] : [...rp, 'policy', refused.option],
        refused.message,
        'change the number to one the policy accepts',
      ),
    );
  return problems;
}

/** The library's refusal of the policy's numbers (made into a limiter once, never used), or undefined. */
function refusedNumber(policy: SmoothPolicyConfig): { option: string | undefined; message: string } | undefined {
  try {
    if (policy.algorithm === 'smoothBursty')
      SmoothRateLimiter.bursty(policy.permitsPerSecond, { maxBurstSeconds: policy.maxBurstSeconds ?? 1 });
    else SmoothRateLimiter.warmingUp(policy.permitsPerSecond, policy.warmupMs, { coldFactor: policy.coldFactor ?? 3 });
    return undefined;
  } catch (err) {
    if (!(err instanceof FloodgateError)) throw err;
    return { option: err.option?.split('.').at(-1), message: err.message };
  }
}
