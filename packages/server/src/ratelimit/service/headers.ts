/**
 * The response fields a decision asks Envoy to add: the IETF draft's `RateLimit-Policy` and
 * `RateLimit` (one list member per limited descriptor), and `Retry-After` when over limit.
 */
import { FIELD, policyItem, retryAfterSeconds, serviceHead, serviceItem } from 'floodgate/http';
import type { Decision } from 'floodgate';
import type { Rule } from './rules.js';
import type { DescriptorStatus } from './status.js';
import { UNIT_MS } from './units.js';

const POLICY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The `RateLimit-Policy` member of each rule under each name it was sent with: they never change. */
const POLICY_ITEMS = new WeakMap<Rule, Map<string, string>>();

function policyItemOf(rule: Rule, name: string): string {
  let byName = POLICY_ITEMS.get(rule);
  if (byName === undefined) POLICY_ITEMS.set(rule, (byName = new Map()));
  let item = byName.get(name);
  if (item === undefined) {
    item =
      rule.policy === undefined
        ? `"${name}";q=0;w=${Math.max(1, Math.ceil(UNIT_MS[rule.unit!] / 1000))}`
        : policyItem({ name, policy: rule.policy, unit: 'requests', pk: undefined });
    byName.set(name, item);
  }
  return item;
}

/**
 * rateLimitHeaders returns `[name, value]` pairs for `statuses`: each descriptor with a limit is
 * a policy named by its `rate_limit.name` when that is a valid draft name, else `d<index>`.
 * Nothing is returned when no descriptor has a limit.
 */
export function rateLimitHeaders(
  statuses: readonly DescriptorStatus[],
  overallCode: 'OK' | 'OVER_LIMIT',
): Array<[string, string]> {
  const policies: string[] = [];
  const services: string[] = [];
  const refused: Decision[] = [];
  const used = new Set<string>();
  statuses.forEach((s, i) => {
    if (s.rule === undefined) return;
    let name = s.rule.name !== undefined && POLICY_NAME.test(s.rule.name) ? s.rule.name : `d${i}`;
    if (used.has(name)) name = `d${i}`;
    used.add(name);
    policies.push(policyItemOf(s.rule, name));
    if (s.decision !== undefined && s.rule.policy !== undefined) {
      services.push(serviceItem(serviceHead(name), s.decision, undefined));
      if (s.code === 'OVER_LIMIT') refused.push(s.decision);
    } else {
      // A limit of 0: nothing is ever admitted; `t` is the rest of the unit's window.
      services.push(`"${name}";r=0;t=${Math.ceil(s.durationUntilResetMs / 1000)}`);
    }
  });
  if (policies.length === 0) return [];
  const headers: Array<[string, string]> = [
    [FIELD.policy, policies.join(', ')],
    [FIELD.service, services.join(', ')],
  ];
  if (overallCode === 'OVER_LIMIT') {
    const seconds = retryAfterSeconds(refused);
    if (seconds !== undefined) headers.push([FIELD.retryAfter, String(seconds)]);
  }
  return headers;
}
