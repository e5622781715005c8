/**
 * A request's wait for its turn under a route's smooth rules: it reserves a turn on each rule's
 * pace (Guava's smooth limiter, shared by the fleet on Redis) and waits for it, or is answered 429
 * when its turn is further away than the rule's `maxWaitMs`.
 */
import { FloodgateError } from 'floodgate';
import { FIELD, PROBLEM_CONTENT_TYPE, problemBody, type HeaderPair } from 'floodgate/http';
import type { DecisionReporter } from '../outcomes.js';
import type { SmoothPolicyConfig } from '../config/smooth-schema.js';
import type { SmoothPace } from './smooth-pace.js';

/** CompiledSmoothRule is one smooth rule ready to pace requests. */
export interface CompiledSmoothRule {
  readonly name: string;
  /** Permits one request reserves (a whole number, at least 1). */
  readonly cost: number;
  /** Longest wait for a turn, in ms; a turn further away is refused at once. */
  readonly maxWaitMs: number;
  /** Most requests of this process waiting at once; past it, only a request whose turn is free now passes. */
  readonly maxQueue: number;
  readonly pace: SmoothPace;
  /** The rule's `RateLimit-Policy` item. */
  readonly policyItem: string;
  /** The key the rule's decisions are reported under (the rule paces the route as a whole). */
  readonly key: string;
}

/** SmoothRefusal is a request refused by a smooth rule: its status, headers and problem body. */
export interface SmoothRefusal {
  readonly allowed: false;
  readonly status: number;
  readonly headers: readonly HeaderPair[];
  readonly body: string;
}

/** SmoothWaitOptions carries what {@link waitSmooth} needs besides the rules. */
export interface SmoothWaitOptions {
  readonly reporter: DecisionReporter;
  /** What a store failure the pace itself rejects with answers (the store's own `onError` usually answers first). */
  readonly onStoreError: 'fail-open' | 'fail-closed';
  /** Fires when the client goes away: its wait ends and its turn is given back when that is safe. */
  readonly signal: AbortSignal | undefined;
}

/**
 * waitSmooth resolves to undefined once the request's turn has come under every rule of `rules`
 * (in order), or to the refusal of the first rule it cannot wait for: 429 when the turn is further
 * than `maxWaitMs` away (or the line is full and no turn is free now), 503 when the store failed
 * and its policy is fail-closed, or when the client left.
 */
export async function waitSmooth(
  routeName: string,
  rules: readonly CompiledSmoothRule[],
  options: SmoothWaitOptions,
): Promise<SmoothRefusal | undefined> {
  for (const rule of rules) {
    const refusal = await waitTurn(routeName, rule, options);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}

async function waitTurn(
  routeName: string,
  rule: CompiledSmoothRule,
  options: SmoothWaitOptions,
): Promise<SmoothRefusal | undefined> {
  const { reporter } = options;
  let code: string;
  reporter.queueDepth(routeName, rule.name, 1);
  try {
    if (rule.pace.waiting >= rule.maxQueue) {
      if (await rule.pace.tryAcquire(rule.cost, 0)) return admitted(routeName, rule, reporter);
      code = 'QUEUE_FULL';
    } else {
      const signal = options.signal;
      await rule.pace.acquire(rule.cost, { maxWaitMs: rule.maxWaitMs, ...(signal === undefined ? {} : { signal }) });
      return admitted(routeName, rule, reporter);
    }
  } catch (err) {
    code = err instanceof FloodgateError ? err.code : 'STORE_ERROR';
    if (code !== 'WAIT_TIMEOUT' && code !== 'ABORTED') return storeFailed(routeName, rule, code, options);
  } finally {
    reporter.queueDepth(routeName, rule.name, -1);
  }
  reported(routeName, rule, reporter, 'queue_rejected', code);
  if (code === 'ABORTED') return unavailable(rule, 'the client left before its turn came', []);
  return tooFar(rule, code);
}

function admitted(routeName: string, rule: CompiledSmoothRule, reporter: DecisionReporter): undefined {
  reported(routeName, rule, reporter, 'queued', 'turn');
  return undefined;
}

function reported(
  routeName: string,
  rule: CompiledSmoothRule,
  reporter: DecisionReporter,
  outcome: 'queued' | 'queue_rejected' | 'fail_open' | 'fail_closed',
  reason: string,
): void {
  reporter.outcome(routeName, rule.name, outcome);
  reporter.decided?.({ route: routeName, rule: rule.name, key: rule.key, outcome, decision: undefined, reason });
}

/** The 429 of a request whose turn is too far away: retry once the line has moved on by `maxWaitMs`. */
function tooFar(rule: CompiledSmoothRule, code: string): SmoothRefusal {
  const retrySeconds = Math.max(1, Math.ceil(rule.maxWaitMs / 1000));
  const detail =
    code === 'QUEUE_FULL'
      ? `the line of requests waiting here is full (maxQueue ${rule.maxQueue}) and no turn is free now`
      : `the request's turn is more than ${rule.maxWaitMs} ms away`;
  const headers: HeaderPair[] = [
    [FIELD.policy, rule.policyItem],
    [FIELD.service, `"${rule.name}";r=0;t=${retrySeconds}`],
    [FIELD.retryAfter, String(retrySeconds)],
    [FIELD.cacheControl, 'no-store'],
    [FIELD.contentType, PROBLEM_CONTENT_TYPE],
  ];
  return { allowed: false, status: 429, headers, body: problemBody('quota-exceeded', [rule.name], detail) };
}

/** A store failure the pace rejected with: admitted under fail-open, else 503 (both marked degraded). */
function storeFailed(
  routeName: string,
  rule: CompiledSmoothRule,
  code: string,
  options: SmoothWaitOptions,
): SmoothRefusal | undefined {
  const open = options.onStoreError === 'fail-open';
  reported(routeName, rule, options.reporter, open ? 'fail_open' : 'fail_closed', code);
  if (open) return undefined;
  return unavailable(rule, 'the rate-limit store is unavailable', [['floodgate-degraded', 'fail-closed']]);
}

function unavailable(rule: CompiledSmoothRule, detail: string, extra: readonly HeaderPair[]): SmoothRefusal {
  const headers: HeaderPair[] = [...extra, [FIELD.cacheControl, 'no-store'], [FIELD.contentType, PROBLEM_CONTENT_TYPE]];
  return { allowed: false, status: 503, headers, body: problemBody('temporary-reduced-capacity', [rule.name], detail) };
}

/**
 * smoothPolicyItem returns a smooth policy's `RateLimit-Policy` item: its rate as a whole quota
 * over whole seconds (`q=10;w=1` for 10/s, `q=1;w=4` for 0.25/s).
 */
export function smoothPolicyItem(name: string, policy: SmoothPolicyConfig): string {
  const rate = policy.permitsPerSecond;
  if (rate >= 1) return `"${name}";q=${Math.floor(rate)};w=1`;
  return `"${name}";q=1;w=${Math.ceil(1 / rate)}`;
}
