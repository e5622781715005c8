/**
 * The framework-neutral handler: from a request to a {@link Verdict}, over one or more dimensions
 * decided together.
 */
import type { Decision } from '../core/decision.js';
import type { ConsumeOptions } from '../limiter.js';
import { ClientIpResolver } from './client-ip.js';
import { FailureReport, isStoreFailure } from './failure-report.js';
import { inRange, parseIp } from './ip.js';
import { StoreKeys } from './keys.js';
import { checkOptions, type HttpLimitOptions, type Settings } from './options.js';
import type { HttpRequest, Outcome } from './request.js';
import { chosenLimiter, costOf, identityOf, skipOf } from './user-functions.js';
import { PASS, VerdictWriter, type Charge, type Plan, type Verdict } from './verdict.js';

const ZERO_COST: ConsumeOptions = Object.freeze({ cost: 0 });

/**
 * HttpGate decides requests for the adapters. `check` consumes from each dimension in order; if
 * one refuses, the dimensions already charged are refunded, so a refused request spends nothing
 * anywhere, and the others are peeked so that every policy is still reported. When every limiter
 * is synchronous (the memory store) the whole decision is made without a promise.
 *
 * @example
 * const gate = new HttpGate({ limiter: new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }) }) });
 * const verdict = gate.check(request); // a Verdict, or a promise of one for asynchronous stores
 */
export class HttpGate<Req = unknown> {
  /** clientIp resolves `req.ip` for the adapters' request views. */
  readonly clientIp: ClientIpResolver;
  /** watchesOutcome is true when adapters must report how admitted requests end ({@link settle}). */
  readonly watchesOutcome: boolean;
  private readonly settings: Settings<Req>;
  private readonly writer: VerdictWriter<Req>;
  /** Each dimension's store keys, in the order of `settings.dimensions`. */
  private readonly keys: readonly StoreKeys[];
  /** Logs each outage and each failing option once, and tells the observer of store errors. */
  private readonly report: FailureReport;

  constructor(options: HttpLimitOptions<Req>) {
    this.settings = checkOptions(options);
    this.clientIp = new ClientIpResolver(options, this.settings.logger);
    this.writer = new VerdictWriter(this.settings);
    this.keys = this.settings.dimensions.map((d) => new StoreKeys(d.name, this.settings.maxKeyLength, this.settings.partitionKeys));
    this.watchesOutcome = this.settings.refundWhen !== undefined;
    this.report = new FailureReport(this.settings);
  }

  /**
   * check returns the verdict for `req`, charging it when admitted; a promise only when some
   * limiter's store is asynchronous. It never throws and its promise never rejects, except under
   * `onStoreError: 'throw'` with a store error:
   * - a decision's `reason` drives the answer: `ok` admits; `limit` and `fallback` refusals are 429
   *   `quota-exceeded`; `fail-closed` and `store-full` are 503 `temporary-reduced-capacity` with
   *   `Retry-After`; `fail-open` admits, marked by the degraded header, with no `RateLimit` item
   *   for the policy that was not decided;
   * - a store error that reaches the gate is answered by `onStoreError`;
   * - an option function (`skip`, `cost`, a dimension's `key` or limiter chooser) that throws or
   *   returns the wrong type, or a key the store refuses, is an application fault: a 500
   *   problem+json naming nothing internal, with an {@link OptionFunctionError} (or the limiter's
   *   FloodgateError) logged once per option.
   */
  check(req: HttpRequest<Req>): Verdict | Promise<Verdict> {
    try {
      const s = this.settings;
      if (s.skip !== undefined && skipOf(s.skip, req)) return PASS;
      if (s.allowList.length > 0 && this.allowListed(req)) return PASS;
      const cost = s.cost === undefined ? 1 : costOf(s.cost, req);
      if (s.dimensions.length === 1) return this.checkOne(req, cost);
      const plans = this.plan(req);
      if (plans.length === 0) return PASS;
      return this.decide(plans, cost);
    } catch (err) {
      // Under `throw`, a synchronous store's error has been reported already: it goes on to the caller.
      if (this.settings.onStoreError === 'throw' && isStoreFailure(err)) throw err;
      return this.failed(err, undefined, 0, 0);
    }
  }

  /** settle gives an admitted request's cost back when the `refundWhen` option says so for its outcome. */
  settle(verdict: Verdict, outcome: Outcome, req: HttpRequest<Req>): void {
    const refundWhen = this.settings.refundWhen;
    if (verdict.charges === undefined || refundWhen === undefined || !refundWhen(outcome, req)) return;
    for (const c of verdict.charges) {
      if (c.limiter.table.synchronous) c.limiter.refundSync(c.key, c.cost);
      else c.limiter.refund(c.key, c.cost).catch((err: unknown) => this.report.storeFailed(c.dimension, err, 'fail-open'));
    }
  }

  private allowListed(req: HttpRequest<Req>): boolean {
    const ip = parseIp(req.ip);
    return ip !== undefined && this.settings.allowList.some((range) => inRange(range, ip));
  }

  /** The dimensions that apply to `req`, with their limiters and store keys. */
  private plan(req: HttpRequest<Req>): Plan<Req>[] {
    const plans: Plan<Req>[] = [];
    for (let i = 0; i < this.settings.dimensions.length; i++) {
      const p = this.planOf(i, req);
      if (p !== undefined) plans.push(p);
    }
    return plans;
  }

  /** The plan of dimension `i` for `req`; undefined when it does not apply (no limiter or no identity). */
  private planOf(i: number, req: HttpRequest<Req>): Plan<Req> | undefined {
    const dimension = this.settings.dimensions[i]!;
    const limiter = dimension.limiter ?? chosenLimiter(dimension, req);
    if (limiter === undefined) return undefined;
    const identity = identityOf(dimension, req);
    if (identity === undefined) return undefined;
    const { key, pk } = this.keys[i]!.of(identity);
    return { dimension, limiter, key, pk };
  }

  /** checkOne is the common single-dimension check: what {@link decideSync} decides, without its arrays. */
  private checkOne(req: HttpRequest<Req>, cost: number): Verdict | Promise<Verdict> {
    const p = this.planOf(0, req);
    if (p === undefined) return PASS;
    if (!p.limiter.table.synchronous || cost > p.limiter.policy.limit) return this.decide([p], cost);
    let d: Decision;
    try {
      d = p.limiter.consumeSync(p.key, cost === 1 ? undefined : { cost });
    } catch (err) {
      return this.failed(err, [p], 0, cost);
    }
    if (d.reason !== 'ok' || this.report.down) this.report.decided(p.dimension.name, d);
    return d.allowed ? this.writer.admitOne(p, d, cost) : this.writer.refuse([p], [d]);
  }

  private decide(plans: readonly Plan<Req>[], cost: number): Verdict | Promise<Verdict> {
    for (const p of plans) if (!p.limiter.table.synchronous) return this.decideAsync(plans, cost);
    return this.decideSync(plans, cost);
  }

  private decideSync(plans: readonly Plan<Req>[], cost: number): Verdict {
    const options = cost === 1 ? undefined : { cost };
    const decisions: Decision[] = [];
    let at = 0;
    try {
      for (; at < plans.length; at++) {
        const p = plans[at]!;
        const d = cost > p.limiter.policy.limit ? never(p.limiter.peekSync(p.key, ZERO_COST)) : p.limiter.consumeSync(p.key, options);
        decisions.push(d);
        if (!d.allowed) return this.refuseSync(plans, decisions, cost);
      }
    } catch (err) {
      return this.failed(err, plans, at, cost);
    }
    this.noteAll(plans, decisions);
    return this.writer.admit(plans, decisions, cost);
  }

  /** Gives back what earlier dimensions took, then reports every policy as it now stands. */
  private refuseSync(plans: readonly Plan<Req>[], decisions: Decision[], cost: number): Verdict {
    const options = cost === 1 ? undefined : { cost };
    for (let i = 0; i < decisions.length - 1; i++) {
      const q = plans[i]!;
      q.limiter.refundSync(q.key, cost);
      decisions[i] = q.limiter.peekSync(q.key, ZERO_COST);
    }
    for (let i = decisions.length; i < plans.length; i++) {
      const q = plans[i]!;
      const later = cost > q.limiter.policy.limit ? undefined : q.limiter.peekSync(q.key, options);
      decisions.push(later !== undefined && !later.allowed ? later : q.limiter.peekSync(q.key, ZERO_COST));
    }
    this.noteAll(plans, decisions);
    return this.writer.refuse(plans, decisions);
  }

  private async decideAsync(plans: readonly Plan<Req>[], cost: number): Promise<Verdict> {
    const options = cost === 1 ? undefined : { cost };
    const decisions: Decision[] = [];
    let at = 0;
    try {
      for (; at < plans.length; at++) {
        const p = plans[at]!;
        const d = cost > p.limiter.policy.limit ? never(await p.limiter.peek(p.key, ZERO_COST)) : await p.limiter.consume(p.key, options);
        decisions.push(d);
        if (!d.allowed) return await this.refuseAsync(plans, decisions, cost);
      }
    } catch (err) {
      return this.failed(err, plans, at, cost);
    }
    this.noteAll(plans, decisions);
    return this.writer.admit(plans, decisions, cost);
  }

  private async refuseAsync(plans: readonly Plan<Req>[], decisions: Decision[], cost: number): Promise<Verdict> {
    const options = cost === 1 ? undefined : { cost };
    for (let i = 0; i < decisions.length - 1; i++) {
      const q = plans[i]!;
      await q.limiter.refund(q.key, cost);
      decisions[i] = await q.limiter.peek(q.key, ZERO_COST);
    }
    for (let i = decisions.length; i < plans.length; i++) {
      const q = plans[i]!;
      const later = cost > q.limiter.policy.limit ? undefined : await q.limiter.peek(q.key, options);
      decisions.push(later !== undefined && !later.allowed ? later : await q.limiter.peek(q.key, ZERO_COST));
    }
    this.noteAll(plans, decisions);
    return this.writer.refuse(plans, decisions);
  }

  /** Tells the failure report of each decision, so that an outage is logged as it begins. */
  private noteAll(plans: readonly Plan<Req>[], decisions: readonly Decision[]): void {
    for (let i = 0; i < decisions.length; i++) this.report.decided(plans[i]!.dimension.name, decisions[i]!);
  }

  /**
   * failed answers an error met while deciding, `plans[0..at)` having been charged `cost`: a
   * store error from `plans[at]`'s limiter by `onStoreError`; anything else (a failing option
   * function, a key the store refuses) as the application's fault, a 500. A refused request is
   * charged nowhere; a request admitted by `fail-open` keeps its charges.
   */
  private failed(err: unknown, plans: readonly Plan<Req>[] | undefined, at: number, cost: number): Verdict {
    const charged: Charge[] = (plans ?? []).slice(0, at).map((p) => ({ dimension: p.dimension.name, limiter: p.limiter, key: p.key, cost }));
    if (plans === undefined || at >= plans.length || !isStoreFailure(err)) {
      this.report.optionFailed(err);
      for (const c of charged) void refundQuietly(c);
      return this.writer.broken();
    }
    const policy = this.settings.onStoreError;
    const name = plans[at]!.dimension.name;
    this.report.storeFailed(name, err, policy);
    if (policy === 'fail-open') return this.writer.degraded(name, charged, policy);
    for (const c of charged) void refundQuietly(c);
    if (policy === 'throw') throw err;
    return this.writer.degraded(name, [], policy);
  }
}

/** A refusal that no wait can cure: the cost is above the policy's limit. */
function never(state: Decision): Decision {
  return { ...state, allowed: false, retryAfterMs: Infinity, reason: 'limit' };
}

async function refundQuietly(charge: Charge): Promise<void> {
  try {
    await charge.limiter.refund(charge.key, charge.cost);
  } catch {
    // The store is failing already, and the failure was logged once.
  }
}
