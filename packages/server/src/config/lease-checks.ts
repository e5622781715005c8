/**
 * The checks of rules decided from quota leases (`lease:` on a rule) that the schema cannot
 * express: leases are taken from a Redis store, in enforce or shadow mode, on a policy the
 * library can lease (its own refusal is the message).
 */
import { FloodgateError, leaseSettingsOf, leaseTermsOf } from 'floodgate';
import { policyOf } from './policy.js';
import type { ConfigProblem, Locator } from './problems.js';
import type { GatewayConfig, PolicyConfig } from './schema.js';
import { isSmoothPolicy } from './smooth-schema.js';

/** checkLeases returns the problems of every rule of `config` with `lease:`. */
export function checkLeases(config: GatewayConfig, at: Locator): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  config.routes.forEach((route, i) =>
    route.rules.forEach((rule, j) => {
      if (rule.lease === undefined) return;
      const rp = ['routes', i, 'rules', j, 'lease'];
      if (config.store.type !== 'redis')
        problems.push(
          at.problem(
            rp,
            'a lease is taken from a shared store, and this gateway keeps its state in memory (store.type: memory)',
            'set store: { type: redis, ... } so that every gateway process leases from one Redis, or remove lease',
          ),
        );
      if (rule.mode === 'queue')
        problems.push(
          at.problem(
            rp,
            'a queue-mode rule books future turns on the shared state, which a lease does not hold',
            'use mode: enforce or shadow with a lease, or remove lease',
          ),
        );
      const refusal = refusalOf(rule.policy, rule.lease);
      if (refusal !== undefined)
        problems.push(
          at.problem(
            refusal.option === 'lease.policy' ? ['routes', i, 'rules', j, 'policy', 'algorithm'] : rp,
            refusal.message,
            'use tokenBucket, leakyBucket, gcra or fixedWindow for a leased rule, or remove lease',
          ),
        );
    }),
  );
  return problems;
}

/** The library's refusal of leasing `policy` under `lease`, or undefined when it accepts. */
function refusalOf(
  policy: PolicyConfig,
  lease: NonNullable<GatewayConfig['routes'][number]['rules'][number]['lease']>,
): { option: string | undefined; message: string } | undefined {
  if (isSmoothPolicy(policy))
    return { option: 'lease.policy', message: `a ${policy.algorithm} policy paces requests; it cannot be leased` };
  try {
    leaseTermsOf(policyOf(policy), leaseSettingsOf(lease, 'lease'));
    return undefined;
  } catch (error) {
    if (error instanceof FloodgateError) return { option: error.option, message: error.message };
    throw error;
  }
}
