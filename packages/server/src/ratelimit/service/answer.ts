/**
 * Each descriptor's answer, as Envoy's service writes it: no limit (OK, nothing remaining),
 * unlimited (OK, 4294967295 remaining), a limit of 0 (refused for the rest of its unit), or the
 * policy's decision, where shadow and quota mode answer OK to a limit that is over.
 */
import type { Decision } from 'floodgate';
import type { Rule } from './rule.js';
import type { DescriptorStatus } from './status.js';
import { UNIT_MS } from './units.js';

/** MAX_UINT32 is what Envoy's service reports as the remaining hits of an unlimited descriptor. */
export const MAX_UINT32 = 4_294_967_295;

/** noLimitStatus returns the answer for a descriptor no limit applies to (none configured, or replaced). */
export function noLimitStatus(metricKey: string | undefined): DescriptorStatus {
  return {
    code: 'OK',
    rule: undefined,
    decision: undefined,
    limitRemaining: 0,
    durationUntilResetMs: 0,
    shadowed: false,
    metricKey,
  };
}

/** unlimitedStatus returns the answer for an unlimited descriptor. */
export function unlimitedStatus(metricKey: string | undefined): DescriptorStatus {
  return { ...noLimitStatus(metricKey), limitRemaining: MAX_UINT32 };
}

/**
 * limitedStatus returns the answer of `rule` for `decision` (undefined for a limit of 0, which
 * refuses until its unit's window ends); `enforcing` is false in shadow or quota mode.
 */
export function limitedStatus(
  rule: Rule,
  decision: Decision | undefined,
  options: { readonly enforcing: boolean; readonly nowMs: number; readonly metricKey: string | undefined },
): DescriptorStatus {
  if (decision === undefined) {
    const unitMs = UNIT_MS[rule.unit!];
    return {
      code: options.enforcing ? 'OVER_LIMIT' : 'OK',
      rule,
      decision: undefined,
      limitRemaining: 0,
      durationUntilResetMs: unitMs - (options.nowMs % unitMs),
      shadowed: !options.enforcing,
      metricKey: options.metricKey,
    };
  }
  const refused = !decision.allowed;
  return {
    code: refused && options.enforcing ? 'OVER_LIMIT' : 'OK',
    rule,
    decision,
    limitRemaining: Math.min(MAX_UINT32, decision.remaining),
    durationUntilResetMs: refused && Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : decision.resetMs,
    shadowed: refused && !options.enforcing,
    metricKey: options.metricKey,
  };
}
