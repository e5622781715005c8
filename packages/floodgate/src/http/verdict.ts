/**
 * Verdicts: what the handler tells an adapter to do with a request, with every header value
 * already written.
 */
import type { Decision } from '../core/decision.js';
import { AdmitMemo } from './admit-memo.js';
import type { Limiter } from '../limiter.js';
import {
  degradedReason,
  endRefusal,
  refusalKind,
  serviceList,
  storeDownAnswer,
  undecided,
  type HeaderPair,
} from './answers.js';
import { FIELD, legacyHeaders, policyItem, serviceItem } from './headers.js';
import type { CheckedDimension, Settings } from './options.js';
import type { DimensionDecision, RateLimitInfo } from './rate-limit-info.js';
import { INTERNAL_PROBLEM, PROBLEM_CONTENT_TYPE, STATUS_OF, problemBody } from './problem.js';

export type { DimensionDecision, RateLimitInfo } from './rate-limit-info.js';

export type { HeaderPair } from './answers.js';

/** Charge is what one dimension charged an admitted request, kept to refund it on its outcome. */
export interface Charge {
  /** The dimension's name. */
  readonly dimension: string;
  readonly limiter: Limiter;
  readonly key: string;
  readonly cost: number;
}

/**
 * Verdict is the handler's answer for one request. When `allowed`, the adapter sets `headers` and
 * passes the request on; otherwise it answers `statusCode` with `headers` and `body`.
 */
export interface Verdict extends RateLimitInfo {
  readonly headers: readonly HeaderPair[];
  /** The `application/problem+json` body of a refusal. */
  readonly body: string | undefined;
  /** What was charged, when the `refundWhen` option may give it back; else undefined. */
  readonly charges: readonly Charge[] | undefined;
}

/** PASS is the verdict for a request that is not limited at all (skipped, allowed-listed). */
export const PASS: Verdict = Object.freeze({
  allowed: true,
  statusCode: 0,
  headers: [],
  body: undefined,
  charges: undefined,
  decisions: Object.freeze([]),
});

/** Plan is one dimension as it applies to one request: its limiter and store key. */
export interface Plan<Req> {
  readonly dimension: CheckedDimension<Req>;
  readonly limiter: Limiter;
  readonly key: string;
  /** The partition key in base64, when partition keys are on. */
  readonly pk: string | undefined;
}

/** VerdictWriter turns decisions into verdicts under one set of settings. */
export class VerdictWriter<Req> {
  /**
   * The admitted verdicts of the only dimension, when there is one with a fixed limiter and its
   * verdicts depend on nothing but the decision's `r` and `t`: draft headers only, no partition
   * keys, nothing to refund.
   */
  private readonly memo: AdmitMemo<Verdict> | undefined;
  /**
   * The `RateLimit-Policy` value when every dimension applies and each has a fixed limiter without
   * `pk`, written once: a string built afresh costs node more to validate than one it has seen.
   */
  private readonly allPolicies: string | undefined;

  constructor(private readonly settings: Settings<Req>) {
    const only = settings.dimensions.length === 1 ? settings.dimensions[0]! : undefined;
    const plain =
      settings.draftHeaders &&
      settings.legacyReset === undefined &&
      !settings.partitionKeys &&
      settings.refundWhen === undefined;
    const policy = only?.policyItem;
    const head = only?.serviceHead ?? '';
    const policyPair: HeaderPair = [FIELD.policy, policy ?? ''];
    this.memo =
      plain && policy !== undefined
        ? new AdmitMemo((d) => admitted([policyPair, [FIELD.service, serviceItem(head, d, undefined)]]))
        : undefined;
    const fixed = !settings.partitionKeys && settings.dimensions.every((d) => d.policyItem !== undefined);
    this.allPolicies = fixed ? settings.dimensions.map((d) => d.policyItem!).join(', ') : undefined;
  }

  /** admit returns the verdict for a request every dimension admitted. */
  admit(plans: readonly Plan<Req>[], decisions: readonly Decision[], cost: number): Verdict {
    const charges = this.settings.refundWhen === undefined ? undefined : chargesOf(plans, decisions, cost);
    return {
      allowed: true,
      statusCode: 0,
      headers: this.headers(plans, decisions),
      body: undefined,
      charges,
      decisions: named(plans, decisions),
    };
  }

  /** admitOne is {@link admit} for a single dimension, without arrays of plans and decisions. */
  admitOne(plan: Plan<Req>, decision: Decision, cost: number): Verdict {
    const decisions = [{ name: plan.dimension.name, decision }];
    // The memo's verdict stands for every decision with the same r and t: its headers, with this decision.
    if (this.memo !== undefined && decision.reason === 'ok' && plan.limiter === plan.dimension.limiter)
      return { ...this.memo.valueOf(decision), decisions };
    const s = this.settings;
    const charges =
      s.refundWhen === undefined || decision.reason === 'fail-open'
        ? undefined
        : [{ dimension: plan.dimension.name, limiter: plan.limiter, key: plan.key, cost }];
    let headers: HeaderPair[];
    if (s.legacyReset !== undefined || decision.reason !== 'ok') headers = this.headers([plan], [decision]);
    else if (s.draftHeaders)
      headers = [
        [FIELD.policy, policyItemOf(plan)],
        [FIELD.service, serviceItem(plan.dimension.serviceHead, decision, plan.pk)],
      ];
    else headers = [];
    return { allowed: true, statusCode: 0, headers, body: undefined, charges, decisions };
  }

  /**
   * refuse returns the 429 for decisions some of which refused, or a 503 when no limit refused:
   * only a full store, or a store failing closed.
   */
  refuse(plans: readonly Plan<Req>[], decisions: readonly Decision[]): Verdict {
    const violated = decisions.filter((d) => !d.allowed);
    const names = plans.filter((_, i) => !decisions[i]!.allowed).map((p) => p.dimension.name);
    const kind = refusalKind(violated);
    const custom = kind === 'quota-exceeded' ? this.settings.refusal : undefined;
    const headers = endRefusal(this.headers(plans, decisions), violated, custom?.contentType);
    const body = custom?.body ?? problemBody(kind, names);
    return {
      allowed: false,
      statusCode: custom?.statusCode ?? STATUS_OF[kind],
      headers,
      body,
      charges: undefined,
      decisions: named(plans, decisions),
    };
  }

  /**
   * degraded returns the verdict when a store error reached the gate on the dimensions `failed`:
   * admitted and marked (`fail-open`), or 503 `temporary-reduced-capacity` with `Retry-After: 1`
   * (`fail-closed`).
   * Nothing was charged and nothing was decided, so no `RateLimit` is claimed.
   */
  degraded(failed: readonly string[], policy: 'fail-open' | 'fail-closed'): Verdict {
    const answer = storeDownAnswer(failed, policy, this.settings.degradedHeader);
    return {
      allowed: answer.allowed,
      statusCode: answer.status,
      headers: answer.headers,
      body: answer.body,
      charges: undefined,
      decisions: NONE,
    };
  }

  /**
   * broken returns the 500 for a request the application's own options could not decide (an
   * option function threw or returned the wrong type): a problem body that names no internals.
   */
  broken(): Verdict {
    const headers: HeaderPair[] = [
      [FIELD.cacheControl, 'no-store'],
      [FIELD.contentType, PROBLEM_CONTENT_TYPE],
    ];
    return { allowed: false, statusCode: 500, headers, body: INTERNAL_PROBLEM, charges: undefined, decisions: NONE };
  }

  private headers(plans: readonly Plan<Req>[], decisions: readonly Decision[]): HeaderPair[] {
    const s = this.settings;
    const out: HeaderPair[] = [];
    const degraded = s.degradedHeader === undefined ? undefined : degradedReason(decisions);
    if (degraded !== undefined) out.push([s.degradedHeader!, degraded]);
    if (s.draftHeaders) {
      // Plans come in the order of the dimensions, so when all apply the policies are all of them.
      const all = this.allPolicies !== undefined && plans.length === s.dimensions.length;
      let policy = all ? this.allPolicies! : policyItemOf(plans[0]!);
      for (let i = 1; !all && i < plans.length; i++) policy += ', ' + policyItemOf(plans[i]!);
      out.push([FIELD.policy, policy]);
      let service = '';
      for (let i = 0; i < plans.length; i++)
        service = serviceList(service, plans[i]!.dimension.serviceHead, decisions[i]!, plans[i]!.pk);
      if (service !== '') out.push([FIELD.service, service]);
    }
    if (s.legacyReset !== undefined) {
      const decided = decisions.filter((d) => !undecided(d));
      if (decided.length > 0) out.push(...legacyHeaders(decided, s.legacyReset, s.clock.now()));
    }
    return out;
  }
}

/**
 * What an admitted request was charged, to give back by outcome: not where `fail-open` admitted
 * it, since nothing was charged there and a refund would hand out quota once the store is back.
 */
function chargesOf<Req>(
  plans: readonly Plan<Req>[],
  decisions: readonly Decision[],
  cost: number,
): Charge[] | undefined {
  const charges: Charge[] = [];
  for (let i = 0; i < plans.length; i++) {
    const p = plans[i]!;
    if (decisions[i]!.reason !== 'fail-open')
      charges.push({ dimension: p.dimension.name, limiter: p.limiter, key: p.key, cost });
  }
  return charges.length === 0 ? undefined : charges;
}

/** The verdict of an admitted request with these headers and nothing to refund. */
function admitted(headers: readonly HeaderPair[]): Verdict {
  return { allowed: true, statusCode: 0, headers, body: undefined, charges: undefined, decisions: NONE };
}

/** No decisions: nothing was decided. */
const NONE: readonly DimensionDecision[] = Object.freeze([]);

/** Each plan's dimension name with its decision. */
function named<Req>(plans: readonly Plan<Req>[], decisions: readonly Decision[]): DimensionDecision[] {
  return plans.map((p, i) => ({ name: p.dimension.name, decision: decisions[i]! }));
}

/** The `RateLimit-Policy` item of a plan: written once for a fixed limiter without `pk`. */
function policyItemOf<Req>(p: Plan<Req>): string {
  if (p.pk === undefined && p.limiter === p.dimension.limiter) return p.dimension.policyItem!;
  return policyItem({ name: p.dimension.name, policy: p.limiter.policy, unit: p.dimension.quotaUnit, pk: p.pk });
}
