/**
 * One request's admission under its route's rules: enforced rules decided together (all admit or
 * none is charged), shadow rules decided and reported only, queued rules waited for in turn.
 */
import { FloodgateError, consumeAll, consumeAllSync, type Decision, type LimitEntry } from 'floodgate';
import {
  FIELD,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  retryAfterSeconds,
  serviceItem,
  type HeaderPair,
} from 'floodgate/http';
import type { IdentityRefusal } from './identity.js';
import type { DecisionReporter, RuleOutcome } from '../outcomes.js';
import type { ProxyRequest } from './request.js';
import type { CompiledRoute, CompiledRule } from './routes.js';
import { waitSmooth } from './smooth-wait.js';

/** Charge is what an admitted request spent under one rule: the rule (its cost) and the store key. */
export interface Charge {
  readonly rule: CompiledRule;
  readonly key: string;
}

/** Admission is the answer for one request: pass it on with `headers`, or answer `status` with `headers` and `body`. */
export interface Admission {
  readonly allowed: boolean;
  readonly status: number;
  readonly headers: readonly HeaderPair[];
  readonly body: string | undefined;
  /** What an admitted request was charged, rule by rule (enforce and queue rules; undefined when none). */
  readonly charged?: readonly Charge[];
}

/** The share of a limit below which an admitted request counts as near its limit. */
const NEAR_LIMIT_SHARE = 0.1;
const ZERO = Object.freeze({ cost: 0 });
const PASS: Admission = Object.freeze({ allowed: true, status: 0, headers: [], body: undefined });

interface Applied {
  readonly rule: CompiledRule;
  readonly key: string;
  decision: Decision;
}

/** AdmitOptions carries what {@link admit} needs besides the request. */
export interface AdmitOptions {
  readonly reporter: DecisionReporter;
  /** What a store failure does when the store itself throws (its own `onError` usually answers first). */
  readonly onStoreError: 'fail-open' | 'fail-closed';
  /** Fires when the client goes away, to stop waiting in a queue. */
  readonly signal: AbortSignal | undefined;
}

/**
 * admit returns the admission of `req` on `route`: at once, with no promise, when the route's
 * rules all run on a synchronous store (the memory store) and none queues; else a promise of it.
 */
export function admit(route: CompiledRoute, req: ProxyRequest, options: AdmitOptions): Admission | Promise<Admission> {
  if (route.rules.length === 0 && route.smooth.length === 0) return PASS;
  if (route.synchronous) return admitSync(route, req, options);
  return admitAsync(route, req, options);
}

/** admitSync is {@link admit} on a route whose rules all decide without a promise. */
function admitSync(route: CompiledRoute, req: ProxyRequest, options: AdmitOptions): Admission {
  if (route.shadow.length > 0) decideShadowSync(route, req, options.reporter);
  let applied: Applied[] | IdentityRefusal;
  try {
    applied = decideEnforcedSync(route, req, options.reporter);
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    return storeFailed(route, options);
  }
  if (!Array.isArray(applied)) return applied;
  return settle(route, applied, options.reporter);
}

async function admitAsync(route: CompiledRoute, req: ProxyRequest, options: AdmitOptions): Promise<Admission> {
  const shadow = route.shadow.length === 0 ? undefined : decideShadow(route, req, options);
  // Queued rules' identities are settled first: a refusal for one is answered before anything is charged or waited for.
  const queueIdentities = route.queue.length === 0 ? undefined : identifyQueued(route, req, options.reporter);
  if (queueIdentities !== undefined && !Array.isArray(queueIdentities)) {
    if (shadow !== undefined) await shadow;
    return queueIdentities;
  }
  let applied: Applied[] | IdentityRefusal;
  try {
    applied = await decideEnforced(route, req, options.reporter);
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    if (shadow !== undefined) await shadow;
    return storeFailed(route, options);
  }
  if (shadow !== undefined) await shadow;
  if (!Array.isArray(applied)) return applied;
  const refused = applied.filter((a) => !a.decision.allowed);
  if (refused.length > 0) return settle(route, applied, options.reporter);
  for (const a of applied) report(route.name, a, options.reporter, '');
  const queued =
    queueIdentities === undefined ? undefined : await waitInQueues(route, queueIdentities, applied, options);
  if (queued !== undefined) return queued;
  // Paced last, so the turn a request waited for is when it leaves for the upstream.
  const paced = route.smooth.length === 0 ? undefined : await waitSmooth(route.name, route.smooth, options);
  if (paced !== undefined) {
    await giveBack(applied);
    return paced;
  }
  return { allowed: true, status: 0, headers: headersOf(route, applied), body: undefined, charged: applied };
}

/** Whether `err` is a store's failure, answered by the failure policy (anything else is a bug or bad input). */
function isStoreFailure(err: unknown): boolean {
  return (
    !(err instanceof FloodgateError) ||
    err.code === 'STORE_ERROR' ||
    err.code === 'STORE_TIMEOUT' ||
    err.code === 'STORE_REPLY'
  );
}

/** Reports the enforced decisions and answers: refused when any rule refused, else admitted (no queue). */
function settle(route: CompiledRoute, applied: Applied[], reporter: DecisionReporter): Admission {
  let refused: Applied[] | undefined;
  for (const a of applied) if (!a.decision.allowed) (refused ??= []).push(a);
  // A refused request is counted against the rules that refused it only: the others were refunded.
  for (const a of refused ?? applied) report(route.name, a, reporter, '');
  if (refused !== undefined) return refuse(route, applied, refused);
  return { allowed: true, status: 0, headers: headersOf(route, applied), body: undefined, charged: applied };
}

/** A rule's decision: without a promise on a synchronous store (the memory store), so no await is paid for it. */
function consume(rule: CompiledRule, key: string, peek = false): Decision | Promise<Decision> {
  const l = rule.limiter;
  const options = rule.cost === 1 ? undefined : { cost: rule.cost };
  if (l.table.synchronous) return peek ? l.peekSync(key, ZERO) : l.consumeSync(key, options);
  return peek ? l.peek(key, ZERO) : l.consume(key, options);
}

/**
 * The identity `req` counts against under `rule`; undefined when the rule skips it (reported), or
 * the refusal when its identity is absent or invalid and the rule refuses (reported, `shadow_`
 * prefixed for a shadow rule).
 */
function identify(
  route: CompiledRoute,
  rule: CompiledRule,
  req: ProxyRequest,
  reporter: DecisionReporter,
): string | IdentityRefusal | undefined {
  const identity = rule.identity(req);
  if (typeof identity === 'string') return identity;
  const shadow = rule.mode === 'shadow';
  const outcome = identity === undefined ? 'identity_skipped' : shadow ? 'shadow_identity_refused' : 'identity_refused';
  reporter.outcome(route.name, rule.name, outcome);
  return shadow ? undefined : identity;
}

/**
 * The enforced rules that apply to `req` (those not skipping it), with their entries for
 * `consumeAll`; or the refusal of the first rule that refuses it for its identity.
 */
function enforcedEntries(
  route: CompiledRoute,
  req: ProxyRequest,
  reporter: DecisionReporter,
): { entries: LimitEntry[]; rules: CompiledRule[] } | IdentityRefusal {
  const entries: LimitEntry[] = [];
  const rules: CompiledRule[] = [];
  for (const rule of route.enforce) {
    const identity = identify(route, rule, req, reporter);
    if (identity === undefined) continue;
    if (typeof identity !== 'string') return identity;
    entries.push({ limiter: rule.limiter, key: rule.keyOf(identity), cost: rule.cost });
    rules.push(rule);
  }
  return { entries, rules };
}

/**
 * decideEnforced decides the route's enforced rules together through the library's multi-limit
 * decision: admitted only if every rule admits, and a refused request is charged nowhere (no
 * neighbour ever sees a charge that is later taken back). On a refusal, the rules that would have
 * admitted are looked at again without charging, so their headers tell their real state.
 */
async function decideEnforced(
  route: CompiledRoute,
  req: ProxyRequest,
  reporter: DecisionReporter,
): Promise<Applied[] | IdentityRefusal> {
  const found = enforcedEntries(route, req, reporter);
  if (!('entries' in found)) return found;
  const { entries, rules } = found;
  if (entries.length === 0) return [];
  const sync = rules.every((r) => r.limiter.table.synchronous);
  const result = sync ? consumeAllSync(entries) : await consumeAll(entries);
  const applied: Applied[] = entries.map((e, i) => ({ rule: rules[i]!, key: e.key, decision: result.decisions[i]! }));
  if (!result.allowed) {
    for (const a of applied) if (a.decision.allowed) a.decision = await consume(a.rule, a.key, true);
  }
  return applied;
}

/** decideEnforcedSync is {@link decideEnforced} on synchronous stores, without a promise. */
function decideEnforcedSync(
  route: CompiledRoute,
  req: ProxyRequest,
  reporter: DecisionReporter,
): Applied[] | IdentityRefusal {
  const found = enforcedEntries(route, req, reporter);
  if (!('entries' in found)) return found;
  const { entries, rules } = found;
  if (entries.length === 0) return [];
  const result = consumeAllSync(entries);
  const applied: Applied[] = entries.map((e, i) => ({ rule: rules[i]!, key: e.key, decision: result.decisions[i]! }));
  if (!result.allowed) {
    for (const a of applied) if (a.decision.allowed) a.decision = a.rule.limiter.peekSync(a.key, ZERO);
  }
  return applied;
}

/** Refunds what `charged` took and replaces each decision by the rule's state after the refund. */
async function giveBack(charged: readonly Applied[]): Promise<void> {
  for (const a of charged) {
    if (a.rule.cost > 0) await a.rule.limiter.refund(a.key, a.rule.cost);
    a.decision = await consume(a.rule, a.key, true);
  }
}

async function decideShadow(route: CompiledRoute, req: ProxyRequest, options: AdmitOptions): Promise<void> {
  for (const rule of route.shadow) {
    const identity = identify(route, rule, req, options.reporter);
    if (typeof identity !== 'string') continue;
    try {
      const key = rule.keyOf(identity);
      report(route.name, { rule, key, decision: await consume(rule, key) }, options.reporter, 'shadow_');
    } catch {
      // A shadow rule never changes the answer, not even when its store fails.
    }
  }
}

/** decideShadowSync is the shadow rules' decisions on synchronous stores, reported only. */
function decideShadowSync(route: CompiledRoute, req: ProxyRequest, reporter: DecisionReporter): void {
  for (const rule of route.shadow) {
    const identity = identify(route, rule, req, reporter);
    if (typeof identity !== 'string') continue;
    try {
      const key = rule.keyOf(identity);
      report(
        route.name,
        { rule, key, decision: rule.limiter.consumeSync(key, rule.cost === 1 ? undefined : { cost: rule.cost }) },
        reporter,
        'shadow_',
      );
    } catch {
      // A shadow rule never changes the answer, not even when its store fails.
    }
  }
}

function report(route: string, applied: Applied, reporter: DecisionReporter, prefix: '' | 'shadow_'): void {
  const { rule, key, decision: d } = applied;
  let outcome: RuleOutcome;
  if (d.reason === 'fail-open' || d.reason === 'fail-closed')
    outcome = d.reason === 'fail-open' ? 'fail_open' : 'fail_closed';
  else if (d.reason === 'fallback') outcome = d.allowed ? 'fallback_admitted' : 'fallback_limited';
  else if (prefix === 'shadow_') outcome = d.allowed ? 'shadow_admitted' : 'shadow_limited';
  else if (!d.allowed) outcome = 'limited';
  else outcome = d.remaining < d.limit * NEAR_LIMIT_SHARE ? 'near_limit' : 'admitted';
  reporter.outcome(route, rule.name, outcome);
  reporter.decided?.({ route, rule: rule.name, key, outcome, decision: d, reason: d.reason });
}

/** The identity of `req` under each queued rule (undefined where it skips), or the refusal of the first that refuses it. */
function identifyQueued(
  route: CompiledRoute,
  req: ProxyRequest,
  reporter: DecisionReporter,
): (string | undefined)[] | IdentityRefusal {
  const identities: (string | undefined)[] = [];
  for (const rule of route.queue) {
    const identity = identify(route, rule, req, reporter);
    if (identity !== undefined && typeof identity !== 'string') return identity;
    identities.push(identity);
  }
  return identities;
}

async function waitInQueues(
  route: CompiledRoute,
  identities: readonly (string | undefined)[],
  applied: Applied[],
  options: AdmitOptions,
): Promise<Admission | undefined> {
  const waited: Applied[] = [];
  for (let i = 0; i < route.queue.length; i++) {
    const rule = route.queue[i]!;
    const identity = identities[i];
    if (identity === undefined) continue;
    const key = rule.keyOf(identity);
    options.reporter.queueDepth(route.name, rule.name, 1);
    try {
      await rule.limiter.acquire(key, {
        cost: rule.cost,
        maxWaitMs: rule.maxWaitMs,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      options.reporter.outcome(route.name, rule.name, 'queued');
      waited.push({ rule, key, decision: await consume(rule, key, true) });
    } catch (err) {
      options.reporter.outcome(route.name, rule.name, 'queue_rejected');
      options.reporter.decided?.({
        route: route.name,
        rule: rule.name,
        key,
        outcome: 'queue_rejected',
        decision: undefined,
        reason: err instanceof FloodgateError ? err.code : 'STORE_ERROR',
      });
      await giveBack(applied);
      for (const w of waited) if (w.rule.cost > 0) await w.rule.limiter.refund(w.key, w.rule.cost);
      return queueRefusal(rule, err);
    } finally {
      options.reporter.queueDepth(route.name, rule.name, -1);
    }
  }
  applied.push(...waited);
  return undefined;
}

function queueRefusal(rule: CompiledRule, err: unknown): Admission {
  const code = err instanceof FloodgateError ? err.code : 'STORE_ERROR';
  const detail =
    code === 'QUEUE_FULL'
      ? 'the queue for this client is full'
      : code === 'WAIT_TIMEOUT'
        ? `the request could not be admitted within ${rule.maxWaitMs} ms`
        : 'the request could not wait its turn';
  const headers: HeaderPair[] = [
    [FIELD.cacheControl, 'no-store'],
    [FIELD.contentType, PROBLEM_CONTENT_TYPE],
    [FIELD.retryAfter, String(Math.max(1, Math.ceil(rule.maxWaitMs / 1000)))],
  ];
  return { allowed: false, status: 503, headers, body: problemBody('temporary-reduced-capacity', [rule.name], detail) };
}

function refuse(route: CompiledRoute, applied: readonly Applied[], refused: readonly Applied[]): Admission {
  const decisions = refused.map((a) => a.decision);
  const byLimit = decisions.some((d) => d.reason === 'limit' || d.reason === 'fallback');
  const headers = headersOf(route, applied);
  const retryAfter = retryAfterSeconds(decisions);
  if (retryAfter !== undefined) headers.push([FIELD.retryAfter, String(retryAfter)]);
  headers.push([FIELD.cacheControl, 'no-store'], [FIELD.contentType, PROBLEM_CONTENT_TYPE]);
  if (byLimit) return { allowed: false, status: 429, headers, body: quotaBody(refused) };
  return {
    allowed: false,
    status: 503,
    headers,
    body: problemBody(
      'temporary-reduced-capacity',
      refused.map((a) => a.rule.name),
    ),
  };
}

/** The quota-exceeded body naming one rule, built once per rule: most refusals are one rule's. */
const QUOTA_BODIES = new WeakMap<CompiledRule, string>();

/** quotaBody returns the quota-exceeded problem naming the rules of `refused`. */
function quotaBody(refused: readonly Applied[]): string {
  if (refused.length !== 1)
    return problemBody(
      'quota-exceeded',
      refused.map((a) => a.rule.name),
    );
  const rule = refused[0]!.rule;
  let body = QUOTA_BODIES.get(rule);
  if (body === undefined) QUOTA_BODIES.set(rule, (body = problemBody('quota-exceeded', [rule.name])));
  return body;
}

function storeFailed(route: CompiledRoute, options: AdmitOptions): Admission {
  const open = options.onStoreError === 'fail-open';
  for (const rule of route.enforce) options.reporter.outcome(route.name, rule.name, open ? 'fail_open' : 'fail_closed');
  const mark: HeaderPair = ['floodgate-degraded', options.onStoreError];
  if (open) return { allowed: true, status: 0, headers: [mark], body: undefined };
  const headers: HeaderPair[] = [mark, [FIELD.cacheControl, 'no-store'], [FIELD.contentType, PROBLEM_CONTENT_TYPE]];
  return {
    allowed: false,
    status: 503,
    headers,
    body: problemBody(
      'temporary-reduced-capacity',
      route.enforce.map((r) => r.name),
      'the rate-limit store is unavailable',
    ),
  };
}

/** The draft headers of the applied rules, with the degraded mark when a store's failure policy decided. */
function headersOf(route: CompiledRoute, applied: readonly Applied[]): HeaderPair[] {
  if (applied.length === 0) return [];
  let service = '';
  let degraded: string | undefined;
  for (const a of applied) {
    service += (service === '' ? '' : ', ') + serviceItem(a.rule.serviceHead, a.decision, undefined);
    const r = a.decision.reason;
    if (r === 'fail-open' || r === 'fail-closed' || r === 'fallback') degraded ??= r;
  }
  const out: HeaderPair[] = [
    [FIELD.policy, policyOf(route, applied)],
    [FIELD.service, service],
  ];
  if (degraded !== undefined) out.push(['floodgate-degraded', degraded]);
  return out;
}

/** The `RateLimit-Policy` value of the applied rules: the route's own, made once, when they are its enforced rules. */
function policyOf(route: CompiledRoute, applied: readonly Applied[]): string {
  const enforce = route.enforce;
  let same = applied.length === enforce.length;
  for (let i = 0; same && i < applied.length; i++) same = applied[i]!.rule === enforce[i];
  if (same) return route.enforcePolicy;
  let policy = '';
  for (const a of applied) policy += (policy === '' ? '' : ', ') + a.rule.policyItem;
  return policy;
}
