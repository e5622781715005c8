/**
 * The framework-neutral handler: from a request to a {@link Verdict}, over one or more dimensions
 * decided together.
 */
import type { Decision } from '../core/decision.js';
import { decideAll, type LimitEntry, type LimitsDecision } from '../limits.js';
import { decideOne } from '../limits-one.js';
import { ClientIpResolver } from './client-ip.js';
import { FailureReport, isStoreFailure } from './failure-report.js';
import { inRange, parseIp } from './ip.js';
import { StoreKeys } from './keys.js';
import { checkOptions, type HttpLimitOptions, type Settings } from './options.js';
import type { HttpRequest, Outcome } from './request.js';
import { chosenLimiter, costOf, identityOf, skipOf } from './user-functions.js';
import { PASS, VerdictWriter, type Plan, type Verdict } from './verdict.js';

/**
 * HttpGate decides requests for the adapters. The dimensions that apply to a request are decided
 * together by the limiter layer's {@link decideAll}: a request is admitted only if every limit
 * admits it, a refused request is charged
 * nowhere, and no request is ever refused because of a charge that is later taken back. Every
 * policy is still reported. When every limiter is synchronous (the memory store) the whole
 * decision is made without a promise.
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
    this.keys = this.settings.dimensions.map(
      (d) => new StoreKeys(d.name, this.settings.maxKeyLength, this.settings.partitionKeys),
    );
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
    const verdict = this.decideRequest(req);
    if (this.settings.onLimit === undefined) return verdict;
    return verdict instanceof Promise ? verdict.then((v) => this.limited(v, req)) : this.limited(verdict, req);
  }

  /** The verdict for `req`, before `onLimit` is told (see {@link check}). */
  private decideRequest(req: HttpRequest<Req>): Verdict | Promise<Verdict> {
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
      return this.failed(err, undefined);
    }
  }

  /** limited tells the `onLimit` option of a refusal by a limit or the store (not of a 500), and returns the verdict. */
  private limited(verdict: Verdict, req: HttpRequest<Req>): Verdict {
    if (verdict.allowed || verdict.statusCode === 500) return verdict;
    try {
      this.settings.onLimit!(req, verdict);
    } catch (err) {
      this.report.optionThrew('onLimit', err);
    }
    return verdict;
  }

  /** settle gives an admitted request's cost back when the `refundWhen` option says so for its outcome. */
  settle(verdict: Verdict, outcome: Outcome, req: HttpRequest<Req>): void {
    const refundWhen = this.settings.refundWhen;
    if (verdict.charges === undefined || refundWhen === undefined || !refundWhen(outcome, req)) return;
    for (const c of verdict.charges) {
      if (c.limiter.table.synchronous) c.limiter.refundSync(c.key, c.cost);
      else
        c.limiter.refund(c.key, c.cost).catch((err: unknown) => this.report.storeFailed(c.dimension, err, 'fail-open'));
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

  /**
   * checkOne is the common single-dimension check: the limit decided by the limiter layer's
   * {@link decideOne}, without arrays (and without a promise on a synchronous store).
   */
  private checkOne(req: HttpRequest<Req>, cost: number): Verdict | Promise<Verdict> {
    const p = this.planOf(0, req);
    if (p === undefined) return PASS;
    let d: Decision | Promise<Decision>;
    try {
      d = decideOne(p.limiter, p.key, cost);
    } catch (err) {
      return this.failed(err, [p]);
    }
    if (!(d instanceof Promise)) return this.answerOne(p, d, cost);
    return d.then(
      (decision) => this.answerOne(p, decision, cost),
      (err: unknown) => this.failed(err, [p]),
    );
  }

  /** answerOne is {@link answer} for the lone plan `p`, whose decision is `d`. */
  private answerOne(p: Plan<Req>, d: Decision, cost: number): Verdict {
    // An admission by the limit tells the failure report nothing unless an outage is open.
    if (d.reason !== 'ok' || this.report.down) this.report.decided(p.dimension.name, d);
    return d.allowed ? this.writer.admitOne(p, d, cost) : this.writer.refuse([p], [d]);
  }

  /**
   * decide decides several limits together on the limiter layer's {@link decideAll}, without a
   * promise when every store is synchronous: a refused request is charged nowhere, no request is
   * ever refused by a charge that is later taken back, and the limits that would have admitted a
   * refused request report what they have left.
   */
  private decide(plans: readonly Plan<Req>[], cost: number): Verdict | Promise<Verdict> {
    let result: LimitsDecision | Promise<LimitsDecision>;
    try {
      result = decideAll(entriesOf(plans, cost));
    } catch (err) {
      return this.failed(err, plans);
    }
    if (!(result instanceof Promise)) return this.answer(plans, result.decisions, cost);
    return result.then(
      (r) => this.answer(plans, r.decisions, cost),
      (err: unknown) => this.failed(err, plans),
    );
  }

  /** answer turns the decisions of `plans` into the verdict, telling the failure report of each. */
  private answer(plans: readonly Plan<Req>[], decisions: readonly Decision[], cost: number): Verdict {
    for (let i = 0; i < decisions.length; i++) this.report.decided(plans[i]!.dimension.name, decisions[i]!);
    for (const d of decisions) if (!d.allowed) return this.writer.refuse(plans, decisions);
    return plans.length === 1
      ? this.writer.admitOne(plans[0]!, decisions[0]!, cost)
      : this.writer.admit(plans, decisions, cost);
  }

  /**
   * failed answers an error met while deciding `plans` (nothing stays charged: the limiter layer
   * undoes or refunds what it charged before it throws): a store error by `onStoreError`, naming
   * the dimensions on asynchronous stores; anything else (a failing option function, a key the
   * store refuses) as the application's fault, a 500.
   */
  private failed(err: unknown, plans: readonly Plan<Req>[] | undefined): Verdict {
    if (plans === undefined || !isStoreFailure(err)) {
      this.report.optionFailed(err);
      return this.writer.broken();
    }
    const remote = plans.filter((p) => !p.limiter.table.synchronous);
    const names = (remote.length > 0 ? remote : plans).map((p) => p.dimension.name);
    const policy = this.settings.onStoreError;
    this.report.storeFailed(names.join(', '), err, policy);
    if (policy === 'throw') throw err;
    return this.writer.degraded(names, policy);
  }
}

/** The limiter layer's entries for `plans` at `cost`: a plan is already an entry of cost 1. */
function entriesOf<Req>(plans: readonly Plan<Req>[], cost: number): readonly LimitEntry[] {
  return cost === 1 ? plans : plans.map((p) => ({ limiter: p.limiter, key: p.key, cost }));
}
