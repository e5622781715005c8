/**
 * The limit the service decides with, whether the descriptor tree (rules.ts) or a request's own
 * limit override (policies.ts) made it. It sits below both, so neither points at the other for it.
 */
import type { Algorithm } from 'floodgate';
import type { RateLimitUnit } from './units.js';

/** Rule is one configured (or requested) limit, ready to decide with. */
export interface Rule {
  /** Requests per unit; 0 refuses every request. */
  readonly requestsPerUnit: number;
  /** Undefined only for an unlimited rule given no unit. */
  readonly unit: RateLimitUnit | undefined;
  readonly unlimited: boolean;
  readonly name: string | undefined;
  readonly replaces: readonly string[];
  readonly shadowMode: boolean;
  /** Envoy's `quota_mode`: decided and counted like shadow mode, a limit over quota answers OK. */
  readonly quotaMode: boolean;
  /** What one hit charges (`rate_limit.cost`, default 1). */
  readonly cost: number;
  /** The policy counting it; undefined when unlimited or when `requestsPerUnit` is 0. */
  readonly policy: Algorithm | undefined;
}
