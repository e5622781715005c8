/**
 * Refunds of failed exchanges: what an admitted request spent under a rule with `refundOn` is
 * given back when the gateway itself answered the request with one of the listed statuses (502:
 * the upstream failed; 504: it timed out; 413: the body was too large). A client that left (499)
 * and an upstream's own 502 or 504 are never refunded: the first is the client's doing, and the
 * second is an answer the upstream chose to give.
 */
import type { Logger } from 'pino';
import type { DecisionReporter } from '../outcomes.js';
import type { Charge } from './decide.js';
import type { UpstreamResult } from './proxy.js';
import type { CompiledRoute } from './routes.js';

/** RefundContext is where {@link refundFailed} reports and logs. */
export interface RefundContext {
  readonly reporter: DecisionReporter;
  readonly log: Logger;
}

/**
 * refundFailed gives back, under each rule of `charged` whose `refundOn` lists the status the
 * gateway answered, the rule's cost on the key it was charged to, and reports each refund as the
 * outcome `refunded`. On a synchronous store (memory) the refunds are done when it returns; on
 * Redis they are sent then, and a refund that fails is logged (the request was answered already).
 */
export function refundFailed(
  route: CompiledRoute,
  charged: readonly Charge[] | undefined,
  result: UpstreamResult,
  ctx: RefundContext,
): void {
  if (!route.refunds || charged === undefined || !answeredByGateway(result)) return;

  for (const { rule, key } of charged) {
    if (rule.refundOn === undefined || !rule.refundOn.has(result.status) || rule.cost === 0) continue;
    ctx.reporter.outcome(route.name, rule.name, 'refunded');
    const failed = (err: unknown): void =>
      ctx.log.warn({ route: route.name, rule: rule.name, error: (err as Error).message }, 'refund failed');
    try {
      if (rule.limiter.table.synchronous) rule.limiter.refundSync(key, rule.cost);
      else rule.limiter.refund(key, rule.cost).catch(failed);
    } catch (err) {
      failed(err);
    }
  }
}

/** Whether the status of `result` is the gateway's answer for an upstream or body failure, not the upstream's nor a client's leaving. */
function answeredByGateway(result: UpstreamResult): boolean {
  return result.failure !== undefined && result.failure !== 'aborted';
}
