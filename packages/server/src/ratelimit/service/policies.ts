/**
 * The floodgate policies behind a domain's rules: one per (algorithm, requests per unit, unit),
 * shared, and the rules of requests' own limit overrides, bounded.
 */
import { fixedWindow, gcra, slidingWindowCounter, tokenBucket, type Algorithm } from 'floodgate';
import type { DecisionAlgorithm } from './config-descriptors.js';
import type { Rule } from './rule.js';
import { UNIT_MS, type RateLimitUnit } from './units.js';

/** MAX_SHARED is how many distinct policies (and override rules) are kept for reuse; past it, each is made anew. */
export const MAX_SHARED = 4096;

/**
 * Policies makes one policy per (algorithm, requests per unit, unit), shared by every rule that
 * has them. Requests can name limits of their own (overrides), so at most {@link MAX_SHARED}
 * distinct overrides are accepted, and no table, limiter or cache grows past that.
 */
export class Policies {
  private readonly made = new Map<string, Algorithm>();
  private readonly overrides = new Map<string, Rule>();

  /** policyOf returns the policy admitting `requestsPerUnit` per `unit` under `algorithm`; needs `requestsPerUnit` > 0. */
  policyOf(algorithm: DecisionAlgorithm, requestsPerUnit: number, unit: RateLimitUnit): Algorithm {
    const id = `${algorithm}/${requestsPerUnit}/${unit}`;
    let policy = this.made.get(id);
    if (policy === undefined) {
      policy = makePolicy(algorithm, requestsPerUnit, UNIT_MS[unit]);
      if (this.made.size < MAX_SHARED) this.made.set(id, policy);
    }
    return policy;
  }

  /**
   * overrideRule returns the rule for a request's own `limit` override: Envoy's fixed window, not
   * shadowed; undefined when {@link MAX_SHARED} other overrides are in use already.
   */
  overrideRule(requestsPerUnit: number, unit: RateLimitUnit): Rule | undefined {
    const id = `${requestsPerUnit}/${unit}`;
    let rule = this.overrides.get(id);
    if (rule === undefined) {
      if (this.overrides.size >= MAX_SHARED) return undefined;
      rule = {
        requestsPerUnit,
        unit,
        unlimited: false,
        name: undefined,
        replaces: [],
        shadowMode: false,
        quotaMode: false,
        cost: 1,
        policy: requestsPerUnit > 0 ? this.policyOf('fixed-window', requestsPerUnit, unit) : undefined,
      };
      this.overrides.set(id, rule);
    }
    return rule;
  }
}

function makePolicy(algorithm: DecisionAlgorithm, limit: number, windowMs: number): Algorithm {
  switch (algorithm) {
    case 'fixed-window':
      return fixedWindow({ limit, windowMs });
    case 'sliding-window':
      return slidingWindowCounter({ limit, windowMs });
    case 'token-bucket':
      return tokenBucket({ capacity: limit, refillPerSecond: (limit * 1000) / windowMs });
    case 'gcra':
      return gcra({ rate: limit, periodMs: windowMs, maxBurst: limit - 1 });
  }
}
