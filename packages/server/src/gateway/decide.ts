/**
 * One request's admission under its route's rules: enforced rules decided together (all admit or
 * none is charged), shadow rules decided and reported only, queued rules waited for in turn.
 */
import { FloodgateError, decideAll, decideOne, type Decision, type LimitEntry, type LimitsDecision } from 'floodgate';
import {
  FIELD,
  PROBLEM_CONTENT_TYPE,
  STATUS_OF,
  endRefusal,
  isDegraded,
  isStoreFailure,
  problemBody,
  refusalKind,
  serviceList,
  storeDownAnswer,
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
  /** The rules that refused a refused request, with its keys (for the access log; undefined for an identity refusal). */
  readonly refusedBy?: readonly Charge[];
  /** Whether an admitted request waited in a rule's queue. */
  readonly queued?: boolean;
}

/** The share of a limit below which an admitted request counts as near its limit. */
const NEAR_LIMIT_SHARE = 0.1;
/** The header that marks an answer a store's failure policy made. */
const DEGRADED_HEADER = 'floodgate-degraded';
const ZERO = Object.freeze({ cost: 0 });
const PASS: Admission = Object.freeze({ allowed: true, status: 0, headers: [], body: undefined });
/** The joint decision of no rule: nothing to refuse. */
const NO_RULES: LimitsDecision = Object.freeze({ allowed: true, decisions: [] });

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
 * The enforced rules are decided together by the library's `decideAll`; a rule that refuses the
 * request for its identity (absent or invalid) answers before anything is charged or waited for.
 */
export function admit(route: CompiledRoute, req: ProxyRequest, options: AdmitOptions): Admission | Promise<Admission> {
  if (route.rules.length === 0 && route.smooth.length === 0) return PASS;
  if (route.rules.length === 1 && route.enforce.length === 1 && route.smooth.length === 0)
    return admitLone(route, route.enforce[0]!, req, options);
  const shadow = route.shadow.length === 0 ? undefined : decideShadow(route, req, options.reporter);
  const queued = route.queue.length === 0 ? undefined : identifyQueued(route, req, options.reporter);
  if (queued !== undefined && !Array.isArray(queued)) return after(shadow, queued);
  const found = enforcedEntries(route, req, options.reporter);
  if (!('entries' in found)) return after(shadow, found);
  let joint: LimitsDecision | Promise<LimitsDecision>;
  try {
    joint = found.entries.length === 0 ? NO_RULES : decideAll(found.entries);
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    return after(shadow, storeFailed(route, options));
  }
  if (joint instanceof Promise || shadow !== undefined || queued !== undefined || route.smooth.length > 0)
    return finish(route, found, joint, shadow, queued, options);
  return settle(route, appliedOf(found, joint), options.reporter);
}

/**
 * The admission of `req` on a route whose one rule is `rule`, enforced (most routes): {@link admit}'s
 * answer, without the lists it keeps of several rules' entries, decisions and refusals. The rule's
 * limit is decided by the library's `decideOne`, as `decideAll` decides a lone entry.
 */
function admitLone(
  route: CompiledRoute,
  rule: CompiledRule,
  req: ProxyRequest,
  options: AdmitOptions,
): Admission | Promise<Admission> {
  const identity = identify(route, rule, req, options.reporter);
  if (identity === undefined) return admitted(route, []);
  if (typeof identity !== 'string') return identity;
  const key = rule.keyOf(identity);
  let decision: Decision | Promise<Decision>;
  try {
    decision = decideOne(rule.limiter, key, rule.cost);
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    return storeFailed(route, options);
  }
  if (decision instanceof Promise) return finishLone(route, rule, key, decision, options);
  return answerLone(route, { rule, key, decision }, options.reporter);
}

/** The rest of {@link admitLone} on an asynchronous store: its answer once the rule's decision comes. */
async function finishLone(
  route: CompiledRoute,
  rule: CompiledRule,
  key: string,
  pending: Promise<Decision>,
  options: AdmitOptions,
): Promise<Admission> {
  let decision: Decision;
  try {
    decision = await pending;
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    return storeFailed(route, options);
  }
  return answerLone(route, { rule, key, decision }, options.reporter);
}

/** Reports the lone rule's decision `applied` and answers: admitted, or its refusal. */
function answerLone(route: CompiledRoute, applied: Applied, reporter: DecisionReporter): Admission {
  report(route.name, applied, reporter, '');
  return applied.decision.allowed ? admitted(route, [applied]) : refuseLone(route, applied);
}

/** A lone rule's last refusal: answered again while its key is refused with the same fields and body. */
interface LastRefusal {
  readonly key: string;
  readonly decision: Decision;
  readonly admission: Admission;
}

/** Each lone rule's last refusal (see {@link refuseLone}). */
const LAST_REFUSALS = new WeakMap<CompiledRule, LastRefusal>();

/**
 * The refusal of `applied` by the lone rule of `route`: the rule's last refusal when it was of the
 * same key and its fields and body would come out the same (a refused client that asks again
 * within the second, the usual refusal), else made anew. Its fields depend on the decision's
 * reason, remaining and wait in whole seconds only; the route's policy is fixed.
 */
function refuseLone(route: CompiledRoute, applied: Applied): Admission {
  const last = LAST_REFUSALS.get(applied.rule);
  if (last !== undefined && last.key === applied.key && sameRefusal(last.decision, applied.decision))
    return last.admission;
  const admission = refuse(route, [applied], [applied]);
  LAST_REFUSALS.set(applied.rule, { key: applied.key, decision: applied.decision, admission });
  return admission;
}

/** Whether refusals by `a` and `b` have the same fields and body: the same reason, remaining and whole seconds to wait. */
function sameRefusal(a: Decision, b: Decision): boolean {
  return (
    a.reason === b.reason &&
    a.remaining === b.remaining &&
    Math.ceil(a.retryAfterMs / 1000) === Math.ceil(b.retryAfterMs / 1000)
  );
}

/** The answer `answer`, once the shadow rules (if any are pending) are decided and reported. */
function after(shadow: Promise<void> | undefined, answer: Admission): Admission | Promise<Admission> {
  return shadow === undefined ? answer : shadow.then(() => answer);
}

/** The rest of {@link admit} when some part of it is a promise: the joint decision, the shadow rules, or a queue. */
async function finish(
  route: CompiledRoute,
  found: Entries,
  joint: LimitsDecision | Promise<LimitsDecision>,
  shadow: Promise<void> | undefined,
  queued: readonly (string | undefined)[] | undefined,
  options: AdmitOptions,
): Promise<Admission> {
  let result: LimitsDecision;
  try {
    result = await joint;
  } catch (err) {
    if (!isStoreFailure(err)) throw err;
    await shadow;
    return storeFailed(route, options);
  }
  await shadow;
  const applied = appliedOf(found, result);
  if (!result.allowed || (queued === undefined && route.smooth.length === 0))
    return settle(route, applied, options.reporter);
  for (const a of applied) report(route.name, a, options.reporter, '');
  const waited = queued === undefined ? undefined : await waitInQueues(route, queued, applied, options);
  if (waited !== undefined) return waited;
  // Paced last, so the turn a request waited for is when it leaves for the upstream.
  const paced = route.smooth.length === 0 ? undefined : await waitSmooth(route.name, route.smooth, options);
  if (paced !== undefined) {
    await giveBack(applied);
    return paced;
  }
  return { ...admitted(route, applied), queued: queued !== undefined };
}

/** Each enforced rule that applied with its key and its decision from the joint `result`. */
function appliedOf(found: Entries, result: LimitsDecision): Applied[] {
  return found.entries.map((e, i) => ({ rule: found.rules[i]!, key: e.key, decision: result.decisions[i]! }));
}

function admitted(route: CompiledRoute, applied: readonly Applied[]): Admission {
  return { allowed: true, status: 0, headers: headersOf(route, applied), body: undefined, charged: applied };
}

/** Reports the enforced decisions and answers: refused when any rule refused, else admitted (no queue). */
function settle(route: CompiledRoute, applied: Applied[], reporter: DecisionReporter): Admission {
  let refused: Applied[] | undefined;
  for (const a of applied) if (!a.decision.allowed) (refused ??= []).push(a);
  // A refused request is counted against the rules that refused it only: the others were refunded.
  for (const a of refused ?? applied) report(route.name, a, reporter, '');
  if (refused !== undefined) return refuse(route, applied, refused);
  return admitted(route, applied);
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

/** Entries are the enforced rules that apply to a request, with their entries for the joint decision. */
interface Entries {
  readonly entries: LimitEntry[];
  readonly rules: CompiledRule[];
}

/**
 * The enforced rules that apply to `req` (those not skipping it), with their entries for
 * `consumeAll`; or the refusal of the first rule that refuses it for its identity.
 */
function enforcedEntries(
  route: CompiledRoute,
  req: ProxyRequest,
  reporter: DecisionReporter,
): Entries | IdentityRefusal {
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

/** Refunds what `charged` took and replaces each decision by the rule's state after the refund. */
async function giveBack(charged: readonly Applied[]): Promise<void> {
  for (const a of charged) {
    if (a.rule.cost > 0) await a.rule.limiter.refund(a.key, a.rule.cost);
    a.decision = await consume(a.rule, a.key, true);
  }
}

/**
 * decideShadow decides and reports the route's shadow rules, each on its own (a shadow rule never
 * changes the answer, not even when its store fails): at once on synchronous stores, else a
 * promise of their reports.
 */
function decideShadow(route: CompiledRoute, req: ProxyRequest, reporter: DecisionReporter): Promise<void> | undefined {
  let pending: Promise<void>[] | undefined;
  for (const rule of route.shadow) {
    const identity = identify(route, rule, req, reporter);
    if (typeof identity !== 'string') continue;
    try {
      const key = rule.keyOf(identity);
      const decision = consume(rule, key);
      const shadowed = (d: Decision): void => report(route.name, { rule, key, decision: d }, reporter, 'shadow_');
      if (decision instanceof Promise) (pending ??= []).push(decision.then(shadowed, ignore));
      else shadowed(decision);
    } catch {
      // A shadow rule never changes the answer, not even when its store fails.
    }
  }
  return pending === undefined ? undefined : Promise.all(pending).then(ignore);
}

/** ignore drops a shadow rule's store failure, and the reports' results. */
function ignore(): void {}

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
      return queueRefusal(rule, key, err);
    } finally {
      options.reporter.queueDepth(route.name, rule.name, -1);
    }
  }
  applied.push(...waited);
  return undefined;
}

function queueRefusal(rule: CompiledRule, key: string, err: unknown): Admission {
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
  const body = problemBody('temporary-reduced-capacity', [rule.name], detail);
  return { allowed: false, status: 503, headers, body, refusedBy: [{ rule, key }] };
}

function refuse(route: CompiledRoute, applied: readonly Applied[], refused: readonly Applied[]): Admission {
  const violated = refused.length === 1 ? [refused[0]!.decision] : refused.map((a) => a.decision);
  const kind = refusalKind(violated);
  const headers = endRefusal(headersOf(route, applied), violated);
  const body =
    kind === 'quota-exceeded'
      ? quotaBody(refused)
      : problemBody(
          kind,
          refused.map((a) => a.rule.name),
        );
  return { allowed: false, status: STATUS_OF[kind], headers, body, refusedBy: refused };
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
  return storeDownAnswer(
    route.enforce.map((r) => r.name),
    options.onStoreError,
    DEGRADED_HEADER,
  );
}

/** The draft headers of the applied rules, with the degraded mark when a store's failure policy decided. */
function headersOf(route: CompiledRoute, applied: readonly Applied[]): HeaderPair[] {
  if (applied.length === 0) return [];
  let service = '';
  let degraded: string | undefined;
  for (const a of applied) {
    service = serviceList(service, a.rule.serviceHead, a.decision, undefined);
    if (degraded === undefined && isDegraded(a.decision)) degraded = a.decision.reason;
  }
  const policy = policyOf(route, applied);
  const out: HeaderPair[] = service === '' ? [policy] : [policy, [FIELD.service, service]];
  if (degraded !== undefined) out.push([DEGRADED_HEADER, degraded]);
  return out;
}

/** The `RateLimit-Policy` field of the applied rules: the route's own, made once, when they are its enforced rules. */
function policyOf(route: CompiledRoute, applied: readonly Applied[]): HeaderPair {
  const enforce = route.enforce;
  let same = applied.length === enforce.length;
  for (let i = 0; same && i < applied.length; i++) same = applied[i]!.rule === enforce[i];
  if (same) return route.enforcePolicyField;
  let policy = '';
  for (const a of applied) policy += (policy === '' ? '' : ', ') + a.rule.policyItem;
  return [FIELD.policy, policy];
}
