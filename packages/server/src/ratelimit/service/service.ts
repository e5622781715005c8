/**
 * The decision service: Envoy's rate limit semantics (domains, descriptor matching, shadow mode,
 * `replaces`, `unlimited`, overrides, `hits_addend`) over floodgate's limiters and stores.
 */
import {
  FloodgateError,
  Limiter,
  MemoryStore,
  notify,
  systemClock,
  type Algorithm,
  type Clock,
  type Decision,
  type Observer,
  type Store,
} from 'floodgate';
import type { DomainSpec } from './config.js';
import { decideAsync, decideSync, type Charge, type Outcome } from './execute.js';
import { DRAFT_HEADERS, responseHeaders, type ResponseHeaders } from './headers.js';
import type { DescriptorStatus } from './status.js';
import { DecisionError, type DecisionRequest, type RequestDescriptor } from './request.js';
import { ServiceHealth } from './health.js';
import { limitedStatus, noLimitStatus, unlimitedStatus } from './answer.js';
import { nearLimitOf, outcomeOf, type DescriptorOutcome } from './outcome.js';
import { MAX_SHARED, Policies } from './policies.js';
import type { Rule } from './rule.js';
import { DomainRules, counterKey, type Match, type ValueHider } from './rules.js';
import { Reservations } from './reserve.js';

export type { DescriptorStatus } from './status.js';

export { MAX_UINT32 } from './answer.js';

/** DecisionResult is the answer to a request: the overall code, each descriptor's status, and headers. */
export interface DecisionResult {
  readonly overallCode: 'OK' | 'OVER_LIMIT';
  readonly statuses: readonly DescriptorStatus[];
  /** The draft `RateLimit-Policy` and `RateLimit` fields, and `Retry-After` when over limit. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/** RateLimitServiceOptions configures {@link createRateLimitService}. */
export interface RateLimitServiceOptions {
  /** The domains to serve (from {@link parseDescriptorConfig}). */
  domains: readonly DomainSpec[];
  /** Where counters live (default a new MemoryStore); a RedisStore shares limits across processes. */
  store?: Store;
  /** The clock (default the system clock); stores that own their clock (Redis) ignore it. */
  clock?: Clock;
  /** Receives a `decision` event per counted descriptor, named by its metric key. */
  observer?: Observer;
  /** Hears each limited descriptor's outcome (shadow and quota apart from refusals), for metrics. */
  onOutcome?: (outcome: DescriptorOutcome) => void;
  /** Hears each request's answer (`OK`, `OVER_LIMIT`, or `unavailable` when the store failed), for metrics. */
  onRequest?: (answer: 'OK' | 'OVER_LIMIT' | 'unavailable') => void;
  /** Every limit in shadow mode (Envoy's global `SHADOW_MODE`): decided and counted, never refusing. */
  shadowMode?: boolean;
  /** The response headers asked of Envoy (default the IETF draft's `RateLimit-Policy` and `RateLimit`). */
  responseHeaders?: ResponseHeaders;
  /**
   * What each descriptor value the config does not spell out becomes before it names a counter or
   * a metric label, and what a reservation's key becomes (default: kept as it is). `floodgate serve`
   * and `floodgate ratelimit` pass a keyed hash, so a client's API key never reaches the store.
   */
  hideValue?: ValueHider;
}

/** DecideMode says whether a request is charged (`consume`) or only asked about (`peek`). */
export type DecideMode = 'consume' | 'peek';

interface Plan {
  readonly domain: string;
  readonly match: Match | undefined;
  readonly rule: Rule | undefined;
  readonly key: string;
  readonly cost: number;
}

/**
 * RateLimitService answers rate limit requests for its domains. Build it with
 * {@link createRateLimitService}; `reload` swaps the domains without losing any counter.
 */
export class RateLimitService {
  private rules = new Map<string, DomainRules>();
  private readonly policies = new Policies();
  /** A limiter per policy, kept while a rule holds the policy. */
  private readonly limiters = new WeakMap<Algorithm, Limiter>();
  /** store is where the service's counters live (the memory store unless given one). */
  readonly store: Store;
  /** clock is the time the service decides on; stores that own their clock ignore it. */
  readonly clock: Clock;
  /** reservations answers `POST /v1/reserve` on the domains' smooth limits (see reserve.ts). */
  readonly reservations: Reservations;
  /** health is whether the service is serving, as gRPC health checks and `GET /healthcheck` report it. */
  readonly health = new ServiceHealth();
  private readonly observer: Observer | undefined;
  private readonly onOutcome: ((outcome: DescriptorOutcome) => void) | undefined;
  private readonly shadowAll: boolean;
  private readonly onRequest: ((answer: 'OK' | 'OVER_LIMIT' | 'unavailable') => void) | undefined;
  private readonly headers: ResponseHeaders;
  private readonly synchronous: boolean;
  private readonly hideValue: ValueHider | undefined;

  constructor(options: RateLimitServiceOptions) {
    if (typeof options !== 'object' || options === null)
      throw new FloodgateError(
        'INVALID_OPTION',
        'createRateLimitService takes { domains, store?, clock?, observer? }',
        'options',
      );
    if (options.store !== undefined && typeof (options.store as Partial<Store> | null)?.bind !== 'function') {
      throw new FloodgateError(
        'INVALID_OPTION',
        'createRateLimitService.store must be a floodgate store (MemoryStore, RedisStore)',
        'createRateLimitService.store',
      );
    }
    this.store = options.store ?? new MemoryStore();
    this.clock = options.clock ?? systemClock;
    this.observer = options.observer;
    this.onOutcome = options.onOutcome;
    this.onRequest = options.onRequest;
    this.shadowAll = options.shadowMode === true;
    this.headers = options.responseHeaders ?? DRAFT_HEADERS;
    this.hideValue = options.hideValue;
    this.reservations = new Reservations(this.store, this.clock, this.hideValue);
    this.reload(options.domains);
    // Probe once whether the store answers synchronously (the memory store does).
    this.synchronous = this.store.bind(this.policies.policyOf('fixed-window', 1, 'second')).synchronous;
  }

  /** domains returns the names of the domains served. */
  get domains(): string[] {
    return [...this.rules.keys()];
  }

  /** reload serves `domains` from now on; counters of unchanged limits carry on. It throws `INVALID_OPTION` (and changes nothing) for a malformed list or a domain given twice. */
  reload(domains: readonly DomainSpec[]): void {
    if (!Array.isArray(domains))
      throw new FloodgateError(
        'INVALID_OPTION',
        'domains must be an array of domains, as parseDescriptorConfig returns them in config.domains',
        'domains',
      );
    const next = new Map<string, DomainRules>();
    for (const [i, d] of domains.entries()) {
      if (typeof d?.domain !== 'string' || !Array.isArray(d.descriptors))
        throw new FloodgateError(
          'INVALID_OPTION',
          `domains[${i}] is not a domain from parseDescriptorConfig`,
          `domains[${i}]`,
        );
      if (next.has(d.domain))
        throw new FloodgateError(
          'INVALID_OPTION',
          `domain ${JSON.stringify(d.domain)} is given twice`,
          `domains[${i}]`,
        );
      next.set(d.domain, new DomainRules(d, this.policies, this.hideValue));
    }
    this.rules = next;
    this.reservations.reload(domains);
  }

  /**
   * shouldRateLimit decides `request` and charges it when every enforcing limit admits it (with
   * `mode: 'peek'`, or hits 0, nothing is charged). A domain the service does not know answers
   * OK with no limits, as Envoy's service does. It rejects with {@link DecisionError}
   * `STORE_FAILED` when the store fails.
   *
   * @example
   * const result = await service.shouldRateLimit(parseDecisionRequest(body));
   * if (result.overallCode === 'OVER_LIMIT') reply(429);
   */
  async shouldRateLimit(request: DecisionRequest, mode: DecideMode = 'consume'): Promise<DecisionResult> {
    const plans = this.plan(request, mode);
    const charges: Charge[] = [];
    let refused = false;
    for (const p of plans) {
      if (p.rule === undefined || p.rule.unlimited) continue;
      if (p.rule.policy === undefined) refused ||= this.enforces(p.rule);
      else
        charges.push({
          limiter: this.limiterOf(p.rule.policy),
          key: p.key,
          cost: p.cost,
          askCost: p.rule.cost,
          enforcing: this.enforces(p.rule),
        });
    }
    let outcome: Outcome;
    try {
      outcome = this.synchronous ? decideSync(charges, refused) : await decideAsync(charges, refused);
    } catch (error) {
      if (error instanceof FloodgateError && (error.code === 'INVALID_KEY' || error.code === 'INVALID_COST'))
        throw new DecisionError('INVALID_REQUEST', error.message, 'descriptors');
      const failed = new DecisionError('STORE_FAILED', `the store could not decide: ${(error as Error).message}`);
      failed.cause = error;
      this.onRequest?.('unavailable');
      throw failed;
    }
    const result = this.answer(plans, charges, outcome);
    this.onRequest?.(result.overallCode);
    return result;
  }

  /** refund gives each limited descriptor's hits back (never above its limit), as for a request that turned out not to count. */
  async refund(request: DecisionRequest): Promise<void> {
    const refunds: Array<Promise<void>> = [];
    for (const p of this.plan(request, 'consume')) {
      if (p.rule?.policy !== undefined && p.cost > 0)
        refunds.push(this.limiterOf(p.rule.policy).refund(p.key, Math.min(p.cost, p.rule.policy.limit)));
    }
    try {
      await Promise.all(refunds);
    } catch (error) {
      const failed = new DecisionError('STORE_FAILED', `the store could not refund: ${(error as Error).message}`);
      failed.cause = error;
      throw failed;
    }
  }

  /** enforces returns whether `rule` may refuse a request: not in shadow mode (its own or global), not in quota mode. */
  private enforces(rule: Rule): boolean {
    return !(rule.shadowMode || rule.quotaMode || this.shadowAll);
  }

  private limiterOf(policy: Algorithm): Limiter {
    let limiter = this.limiters.get(policy);
    if (limiter === undefined) {
      const table = this.store.bind(policy);
      // A store failure reaches the caller (gRPC UNAVAILABLE), whose own failure mode decides, as
      // Envoy's `failure_mode_deny` does; a store with its own failure policy (Redis) keeps it.
      const guarded = !table.synchronous && table.decidesFailures !== true;
      limiter = new Limiter({
        policy,
        store: this.store,
        clock: this.clock,
        ...(guarded ? { onError: 'throw' as const } : {}),
      });
      this.limiters.set(policy, limiter);
    }
    return limiter;
  }

  private overrideOf(limit: NonNullable<RequestDescriptor['limit']>, index: number): Rule {
    const rule = this.policies.overrideRule(limit.requestsPerUnit, limit.unit);
    if (rule === undefined)
      throw new DecisionError(
        'INVALID_REQUEST',
        `descriptors[${index}].limit: ${MAX_SHARED} distinct limit overrides are in use already; use the config for more`,
        `descriptors[${index}].limit`,
      );
    return rule;
  }

  /**
   * plan finds each descriptor's rule (a request's own `limit` only in a configured domain, as in
   * Envoy's service), then drops the rules that another applying rule replaces; an unlimited rule
   * replaces too, and a named unlimited rule can be replaced, as there.
   */
  private plan(request: DecisionRequest, mode: DecideMode): Plan[] {
    const domain = this.rules.get(request.domain);
    const plans = request.descriptors.map((d, i): Plan => {
      const override = d.limit !== undefined && domain !== undefined;
      const match = override ? undefined : domain?.match(d.entries);
      const rule = override ? this.overrideOf(d.limit!, i) : match?.rule;
      return {
        domain: request.domain,
        match,
        rule,
        key: counterKey(request.domain, match?.counterEntries ?? this.hidden(d.entries)),
        cost: mode === 'peek' ? 0 : costOf(d, request) * (rule?.cost ?? 1),
      };
    });
    let replaced: Set<string> | undefined;
    for (const p of plans)
      if (p.rule !== undefined) for (const name of p.rule.replaces) (replaced ??= new Set()).add(name);
    if (replaced === undefined) return plans;
    return plans.map((p) => (p.rule?.name !== undefined && replaced.has(p.rule.name) ? { ...p, rule: undefined } : p));
  }

  private hidden(entries: RequestDescriptor['entries']): RequestDescriptor['entries'] {
    const hide = this.hideValue;
    return hide === undefined ? entries : entries.map((e) => ({ key: e.key, value: hide(e.value) }));
  }

  private answer(plans: readonly Plan[], charges: readonly Charge[], outcome: Outcome): DecisionResult {
    const nowMs = this.clock.now();
    let c = 0;
    const statuses = plans.map((p): DescriptorStatus => {
      const rule = p.rule;
      const metricKey = p.match?.metricKey;
      if (rule === undefined) return noLimitStatus(metricKey);
      if (rule.unlimited) return unlimitedStatus(metricKey);
      const charge = rule.policy === undefined ? undefined : charges[c];
      const decision = rule.policy === undefined ? undefined : outcome.decisions[c++];
      if (decision !== undefined && charge !== undefined) this.notify(metricKey, charge, decision, nowMs);
      this.report(p, decision);
      return limitedStatus(rule, decision, { enforcing: this.enforces(rule), nowMs, metricKey });
    });
    const overallCode = statuses.some((s) => s.code === 'OVER_LIMIT') ? 'OVER_LIMIT' : 'OK';
    return { overallCode, statuses, headers: responseHeaders(statuses, overallCode, this.headers) };
  }

  private notify(metricKey: string | undefined, charge: Charge, decision: Decision, nowMs: number): void {
    if (this.observer === undefined) return;
    notify(this.observer, 'decision', {
      limiter: metricKey ?? 'override',
      key: undefined,
      cost: charge.cost,
      operation: charge.cost === 0 ? 'peek' : 'consume',
      decision,
      atMs: nowMs,
    });
  }

  private report(p: Plan, decision: Decision | undefined): void {
    if (this.onOutcome === undefined || p.rule === undefined) return;
    this.onOutcome({
      domain: p.domain,
      descriptor: p.match?.metricPath ?? 'override',
      outcome: outcomeOf(p.rule, decision, this.shadowAll),
      peek: p.cost === 0,
      nearLimit: nearLimitOf(decision),
    });
  }
}

function costOf(d: RequestDescriptor, request: DecisionRequest): number {
  return d.hitsAddend ?? request.hitsAddend;
}

/**
 * createRateLimitService returns a {@link RateLimitService} for `options.domains` on
 * `options.store` (default memory).
 *
 * @example
 * const parsed = parseDescriptorConfig(text, 'ratelimit.yaml');
 * if ('errors' in parsed) throw new Error(parsed.errors.map(formatConfigError).join('\n'));
 * const service = createRateLimitService({ domains: parsed.config.domains });
 * const servers = await startRateLimitServers({ service, grpcPort: 8081, httpPort: 8080 });
 */
export function createRateLimitService(options: RateLimitServiceOptions): RateLimitService {
  return new RateLimitService(options);
}
