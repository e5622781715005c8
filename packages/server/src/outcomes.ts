/**
 * What one request's admission came to, rule by rule: the outcomes that metrics count and the
 * dashboard shows, and the reporter they are handed to. The bottom of the server's layers: the
 * gateway reports them, ops and the dashboard receive them, and this file imports nothing of theirs.
 */
import type { Decision } from 'floodgate';

/**
 * RuleOutcome is how one rule answered one request, as counted in metrics. `fail_open` and
 * `fail_closed` are a store's failure policy answering for it; `fallback_admitted` and
 * `fallback_limited` are the local fallback deciding with this process's share of the limit while
 * the store is away (a refusal by the fallback is a 429 like any other). `identity_refused` is a
 * request refused (401 or 400) because its identity under the rule was absent or invalid and the
 * rule refuses such requests (`shadow_identity_refused` for a shadow rule, which refuses nothing);
 * `identity_skipped`, one the rule did not apply to because it is set to skip them. `refunded` is
 * an admitted request whose cost was given back because the gateway answered it with a status the
 * rule's `refundOn` lists (it was first counted as admitted).
 */
export type RuleOutcome =
  | 'admitted'
  | 'near_limit'
  | 'limited'
  | 'shadow_admitted'
  | 'shadow_limited'
  | 'queued'
  | 'queue_rejected'
  | 'fail_open'
  | 'fail_closed'
  | 'fallback_admitted'
  | 'fallback_limited'
  | 'identity_refused'
  | 'identity_skipped'
  | 'shadow_identity_refused'
  | 'refunded';

/** RuleDecision is one rule's answer to one request with the store key it counted against (for the dashboard). */
export interface RuleDecision {
  readonly route: string;
  readonly rule: string;
  readonly key: string;
  readonly outcome: RuleOutcome;
  /** The limiter's decision; undefined for a queue refusal, which `reason` explains. */
  readonly decision: Decision | undefined;
  /** The decision's reason, or the queue's error code (`QUEUE_FULL`, `WAIT_TIMEOUT`). */
  readonly reason: string;
}

/** DecisionReporter receives each rule's outcome and each change of a queue's depth (store calls reach metrics through the store's observer). */
export interface DecisionReporter {
  outcome(route: string, rule: string, outcome: RuleOutcome): void;
  queueDepth(route: string, rule: string, delta: number): void;
  /** decided, when present, also receives each enforced or shadow decision and each queue refusal with its key. */
  decided?(event: RuleDecision): void;
}
