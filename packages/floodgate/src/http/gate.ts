/**
 * The framework-neutral handler: from a request to a {@link Verdict}, over one or more dimensions
 * decided together.
 */
import type { Decision } from '../core/decision.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import type { ConsumeOptions } from '../limiter.js';
import { ClientIpResolver } from './client-ip.js';
import { inRange, parseIp } from './ip.js';
import { StoreKeys } from './keys.js';
import { checkOptions, type HttpLimitOptions, type Settings } from './options.js';
import type { HttpRequest, Outcome } from './request.js';
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
  /** Whether the last store call failed, so that an outage is logged once, not per request. */
  private failing = false;

  constructor(options: HttpLimitOptions<Req>) {
    this.settings = checkOptions(options);
    this.clientIp = new ClientIpResolver(options, this.settings.logger);
    this.writer = new VerdictWriter(this.settings);
    this.keys = this.settings.dimensions.map((d) => new StoreKeys(d.name, this.settings.maxKeyLength, this.settings.partitionKeys));
    this.watchesOutcome = this.settings.refundWhen !== undefined;
  }

  /**
   * check returns the verdict for `req`, charging it when admitted; a promise only when some
   * limiter's store is asynchronous.
   *
   * @throws FloodgateError `INVALID_COST` when the `cost` option returns a negative or non-finite number.
   */
  check(req: HttpRequest<Req>): Verdict | Promise<Verdict> {
    const s = this.settings;
    if (s.skip !== undefined && s.skip(req)) return PASS;
    if (s.allowList.length > 0 && this.allowListed(req)) return PASS;
    const cost = this.costOf(req);
    if (s.dimensions.length === 1) return this.checkOne(req, cost);
    const plans = this.plan(req);
    if (plans.length === 0) return PASS;
    return this.decide(plans, cost);
  }

  /** settle gives an admitted request's cost back when the `refundWhen` option says so for its outcome. */
  settle(verdict: Verdict, outcome: Outcome, req: HttpRequest<Req>): void {
    const refundWhen = this.settings.refundWhen;
    if (verdict.charges === undefined || refundWhen === undefined || !refundWhen(outcome, req)) return;
    for (const c of verdict.charges) {
      if (c.limiter.table.synchronous) c.limiter.refundSync(c.key, c.cost);
      else c.limiter.refund(c.key, c.cost).catch((err: unknown) => this.storeFailed(err));
    }
  }

  private allowListed(req: HttpRequest<Req>): boolean {
    const ip = parseIp(req.ip);
    return ip !== undefined && this.settings.allowList.some((range) => inRange(range, ip));
  }

  private costOf(req: HttpRequest<Req>): number {
    if (this.settings.cost === undefined) return 1;
    const cost = this.settings.cost(req);
    if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0) {
      throw new FloodgateError('INVALID_COST', `the cost option must return a finite number of at least 0, got ${describeValue(cost)}`, 'cost');
    }
    return cost;
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
    const limiter = dimension.limiter ?? dimension.choose!(req);
    if (limiter === undefined) return undefined;
    const identity = dimension.key(req);
    if (identity === undefined) return undefined;
    const { key, pk } = this.keys[i]!.of(identity);
    return { dimension, limiter, key, pk };
  }

  /** checkOne is the common single-dimension check: what {@link decideSync} decides, without its arrays. */
  private checkOne(req: HttpRequest<Req>, cost: number): Verdict | Promise<Verdict> {
    const p = this.planOf(0, req);
    if (p === undefined) return PASS;
    if (!p.limiter.table.synchronous || cost > p.limiter.policy.limit) return this.decide([p], cost);
    const d = p.limiter.consumeSync(p.key, cost === 1 ? undefined : { cost });
    return d.allowed ? this.writer.admitOne(p, d, cost) : this.writer.refuse([p], [d]);
  }

  private decide(plans: readonly Plan<Req>[], cost: number): Verdict | Promise<Verdict> {
    for (const p of plans) if (!p.limiter.table.synchronous) return this.decideAsync(plans, cost);
    return this.decideSync(plans, cost);
  }

  private decideSync(plans: readonly Plan<Req>[], cost: number): Verdict {
    const options = cost === 1 ? undefined : { cost };
    const decisions: Decision[] = [];
    for (const p of plans) {
      const d = cost > p.limiter.policy.limit ? never(p.limiter.peekSync(p.key, ZERO_COST)) : p.limiter.consumeSync(p.key, options);
      decisions.push(d);
      if (!d.allowed) {
        // Give back what earlier dimensions took, then report every policy as it now stands.
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
        return this.writer.refuse(plans, decisions);
      }
    }
    return this.writer.admit(plans, decisions, cost);
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
      this.failing = false;
      return this.writer.admit(plans, decisions, cost);
    } catch (err) {
      if (err instanceof FloodgateError) throw err;
      this.storeFailed(err);
      const charged = plans.slice(0, at).map((p) => ({ limiter: p.limiter, key: p.key, cost }));
      // Fail-closed refuses, and a refused request spends nothing; fail-open serves it, so it counts.
      if (this.settings.onStoreError === 'fail-closed') for (const c of charged) void refundQuietly(c);
      return this.writer.degraded(plans[at]!.dimension.name, charged);
    }
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
    this.failing = false;
    return this.writer.refuse(plans, decisions);
  }

  private storeFailed(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.settings.logger.warn(`floodgate: a rate-limit store failed; applying onStoreError "${this.settings.onStoreError}" until it answers again`, err);
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
    // The store is failing already; the failure was logged once.
  }
}
