/**
 * The compiled route table: each route's matcher, upstream and rules, with a limiter per rule, and
 * the overload guards its requests pass. Limiters (and guards) are kept across reloads for rules
 * (and sections) that did not change, so their counters, and what they learned, live on.
 */
import { LeasedTable, Limiter, type Store } from 'floodgate';
import type { LeasedStore, LeaseOptions } from 'floodgate/redis';
import { FIELD, policyItem, serviceHead, storeKey, type HeaderPair } from 'floodgate/http';
import { policyOf, type CountedPolicyConfig } from '../config/policy.js';
import { isSmoothPolicy, type SmoothPolicyConfig } from '../config/smooth-schema.js';
import type { FleetSmooth } from '../store/store.js';
import { rejectMaskOf, type AmbiguousConfig } from '../config/match-schema.js';
import { NO_PARAMS, compilePath, type PathPattern } from '../config/paths.js';
import type { GatewayConfig, RouteConfig, RuleConfig } from '../config/schema.js';
import { Guards, type GuardEvents, type GuardStep } from './guards.js';
import { ruleIdentity, type RuleIdentity } from './identity.js';
import { identityHider, keyHashingOf, type KeyHashing } from './key-hash.js';
import { paceOf, type SmoothPace } from './smooth-pace.js';
import { smoothPolicyItem, type CompiledSmoothRule } from './smooth-wait.js';
import { describeAmbiguities, normalPathEnd, normalizeTarget } from '../config/normal-path.js';

/** Longest store key, in UTF-16 code units; longer identities are hashed (see `storeKey`). */
const MAX_KEY_LENGTH = 256;

/** CompiledRule is one rule ready to decide: its limiter, identity and header parts. */
export interface CompiledRule {
  readonly name: string;
  readonly mode: RuleConfig['mode'];
  readonly cost: number;
  readonly limiter: Limiter;
  /** The identity a request counts against, undefined when the rule skips it, or the refusal to answer. */
  readonly identity: RuleIdentity;
  /** Longest wait of a queued request, in ms (queue mode). */
  readonly maxWaitMs: number;
  /** The rule's `RateLimit-Policy` item. */
  readonly policyItem: string;
  /** The start of its `RateLimit` item. */
  readonly serviceHead: string;
  /** keyOf returns the store key for an identity. */
  keyOf(identity: string): string;
  /** The statuses the gateway answers for which an admitted request's cost is given back (`refundOn`); undefined for none. */
  readonly refundOn: ReadonlySet<number> | undefined;
}

/** CompiledRoute is one route: what it matches, where it forwards and what it enforces. */
export interface CompiledRoute {
  readonly name: string;
  readonly host: string | undefined;
  readonly methods: ReadonlySet<string> | undefined;
  readonly path: PathPattern;
  readonly upstream: URL;
  readonly enforce: readonly CompiledRule[];
  readonly shadow: readonly CompiledRule[];
  readonly queue: readonly CompiledRule[];
  /** The rules that count requests, in config order (every rule but the smooth ones). */
  readonly rules: readonly CompiledRule[];
  /** The smooth rules, which pace requests (each waits its turn), in config order. */
  readonly smooth: readonly CompiledSmoothRule[];
  /** The `RateLimit-Policy` field of the enforced rules, for a request every one of them applies to. */
  readonly enforcePolicyField: HeaderPair;
  /** Whether every rule decides without a promise (a synchronous store) and none queues or paces: admitted with no await. */
  readonly synchronous: boolean;
  /** Whether a request may wait (a queue or smooth rule): it then needs the signal of its client leaving. */
  readonly waits: boolean;
  /** The overload guards of its requests, its own then its upstream's; undefined when it has none. */
  readonly guards: readonly GuardStep[] | undefined;
  /** The ambiguous spellings this route refuses, as a mask of `ambiguityBit`s. */
  readonly rejectAmbiguities: number;
  /** Whether any of its enforce or queue rules gives back costs (`refundOn`). */
  readonly refunds: boolean;
}

/** RouteMatch is a route with the path parameters of one request. */
export interface RouteMatch {
  readonly route: CompiledRoute;
  readonly params: Readonly<Record<string, string>>;
  /**
   * The request target in normal form (path and query), to forward instead of the one received;
   * undefined when the received one was already normal.
   */
  readonly target?: string;
}

/** PathRefusal is a request refused for an ambiguous spelling of its path (answered 400). */
export class PathRefusal {
  /** What the 400 answer says. */
  readonly detail: string;

  constructor(
    /** The route the normal form matched, or undefined when none did. */
    readonly route: CompiledRoute | undefined,
    /** The refused ambiguities, as a mask of `ambiguityBit`s. */
    readonly ambiguities: number,
  ) {
    this.detail = `the request path is ambiguous (${describeAmbiguities(ambiguities)}): upstreams read such paths differently, so this gateway refuses them`;
  }
}

/** TableOptions says what a {@link RouteTable} is built on. */
export interface TableOptions {
  readonly store: Store;
  readonly env: NodeJS.ProcessEnv;
  /** The table this one replaces, whose unchanged limiters and guards it keeps. */
  readonly previous?: RouteTable;
  /** Hears the guards' circuits change state (default: nobody). */
  readonly events?: GuardEvents;
  /** Where smooth rules pace the whole fleet (a Redis store's); undefined: each paces in this process. */
  readonly fleetSmooth?: FleetSmooth;
  /** Makes the store of a rule with `lease:` (a Redis store's quota leases); the config checks refuse leases without it. */
  readonly leased?: (options: LeaseOptions) => LeasedStore;
  /** How identity values become store keys (default: the config's `keys`); the gateway keeps the one it started with. */
  readonly keyHashing?: KeyHashing;
}

/** RouteTable holds the compiled routes of one config and finds the route of a request. */
export class RouteTable {
  /** The limiters by rule signature, handed to the next table on reload. */
  readonly limiters: ReadonlyMap<string, Limiter>;
  /** Each route's match of a path without parameters, by the route's index: made once, not per request. */
  private readonly bare: readonly RouteMatch[];

  private constructor(
    readonly routes: readonly CompiledRoute[],
    limiters: Map<string, Limiter>,
    /** The smooth rules' paces by rule signature, handed to the next table on reload (their waiters wait on). */
    readonly paces: ReadonlyMap<string, SmoothPace>,
    /** The overload guards of the routes and upstreams. */
    readonly guards: Guards,
    /** The ambiguities refused for a request no route matches (the gateway's `paths.ambiguous`). */
    private readonly rejectAmbiguities: number,
  ) {
    this.limiters = limiters;
    this.bare = routes.map((route) => ({ route, params: NO_PARAMS }));
  }

  /**
   * build returns the table of `config`'s routes on `options.store`, reusing from
   * `options.previous` the limiter of each rule whose route, name, mode and policy are unchanged
   * (same store assumed), and the concurrency limiter and circuit breaker of each route and
   * upstream whose protection is unchanged.
   */
  static build(config: GatewayConfig, options: TableOptions): RouteTable {
    const limiters = new Map<string, Limiter>();
    const paces = new Map<string, SmoothPace>();
    const guards = Guards.build(config, options.previous?.guards, options.events);
    const ctx: CompileContext = {
      store: options.store,
      env: options.env,
      previous: options.previous?.limiters,
      limiters,
      guards,
      fleetSmooth: options.fleetSmooth,
      leased: options.leased,
      previousPaces: options.previous?.paces,
      paces,
      keyHashing: options.keyHashing ?? keyHashingOf(config.keys, options.env),
    };
    const routes = config.routes.map((route) => compileRoute(route, ctx, config.paths.ambiguous));
    return new RouteTable(routes, limiters, paces, guards, rejectMaskOf(config.paths.ambiguous, undefined));
  }

  /**
   * closeLeases gives back the units every leased rule of this table holds (their limiters' stores
   * are quota leases), for shutdown: resolves once Redis has answered, or failed.
   */
  async closeLeases(): Promise<void> {
    await Promise.all(
      [...this.limiters.values()].map((l) => (l.table instanceof LeasedTable ? l.table.close() : undefined)),
    );
  }

  /**
   * find returns the route of a request target (`/path?query`), matched on its path in normal
   * form: with `target` set when that form differs from what was received (forward it instead),
   * or a {@link PathRefusal} when the path has an ambiguity the matched route (or, with no route,
   * the gateway) refuses; undefined when no route matches. A target already in normal form, the
   * usual case, is checked without allocating.
   */
  find(host: string | undefined, method: string, target: string): RouteMatch | PathRefusal | undefined {
    const end = normalPathEnd(target);
    if (end >= 0) return this.match(host, method, end === target.length ? target : target.slice(0, end));
    const normal = normalizeTarget(target);
    if (normal === undefined) return undefined;
    const found = this.match(host, method, normal.path);
    const refused = (found === undefined ? this.rejectAmbiguities : found.route.rejectAmbiguities) & normal.ambiguities;
    if (refused !== 0) return new PathRefusal(found?.route, refused);
    if (found === undefined) return undefined;
    const rewritten = normal.query === undefined ? normal.path : `${normal.path}?${normal.query}`;
    return rewritten === target ? found : { route: found.route, params: found.params, target: rewritten };
  }

  /** match returns the first route matching the request's host, method and path (in normal form), or undefined. */
  match(host: string | undefined, method: string, path: string): RouteMatch | undefined {
    // The bare host is found when a route asks for it: most tables match on paths alone.
    let bareHost: string | undefined | null = null;
    const routes = this.routes;
    for (let i = 0; i < routes.length; i++) {
      const route = routes[i]!;
      if (route.methods !== undefined && !route.methods.has(method)) continue;
      if (route.host !== undefined) {
        if (bareHost === null) bareHost = host === undefined ? undefined : hostWithoutPort(host);
        if (!hostMatches(route.host, bareHost)) continue;
      }
      const params = route.path.match(path);
      if (params === NO_PARAMS) return this.bare[i];
      if (params !== undefined) return { route, params };
    }
    return undefined;
  }

  /** rule returns a route's rule by names, or undefined. */
  rule(routeName: string, ruleName: string): CompiledRule | undefined {
    return this.routes.find((r) => r.name === routeName)?.rules.find((r) => r.name === ruleName);
  }
}

interface CompileContext {
  readonly store: Store;
  readonly env: NodeJS.ProcessEnv;
  readonly previous: ReadonlyMap<string, Limiter> | undefined;
  readonly limiters: Map<string, Limiter>;
  readonly guards: Guards;
  readonly fleetSmooth: FleetSmooth | undefined;
  readonly leased: ((options: LeaseOptions) => LeasedStore) | undefined;
  readonly previousPaces: ReadonlyMap<string, SmoothPace> | undefined;
  readonly paces: Map<string, SmoothPace>;
  readonly keyHashing: KeyHashing;
}

type CountedRuleConfig = RuleConfig & { readonly policy: CountedPolicyConfig };
type SmoothRuleConfig = RuleConfig & { readonly policy: SmoothPolicyConfig };

function isSmoothRule(rule: RuleConfig): rule is SmoothRuleConfig {
  return isSmoothPolicy(rule.policy);
}

function compileRoute(route: RouteConfig, ctx: CompileContext, ambiguous: AmbiguousConfig): CompiledRoute {
  const rules = route.rules
    .filter((rule): rule is CountedRuleConfig => !isSmoothRule(rule))
    .map((rule) => compileRule(route.name, rule, ctx));
  const smooth = route.rules.filter(isSmoothRule).map((rule) => compileSmoothRule(route.name, rule, ctx));
  const enforce = rules.filter((r) => r.mode === 'enforce');
  const queue = rules.filter((r) => r.mode === 'queue');
  return {
    name: route.name,
    host: route.match.host?.toLowerCase(),
    methods: route.match.methods === undefined ? undefined : new Set(route.match.methods),
    path: compilePath(route.match.path, route.match),
    upstream: new URL(route.upstream),
    enforce,
    // Not frozen: a frozen array's elements are read by a slower path where it meets the unfrozen fields of one answer.
    enforcePolicyField: [FIELD.policy, enforce.map((r) => r.policyItem).join(', ')],
    shadow: rules.filter((r) => r.mode === 'shadow'),
    queue,
    rules,
    smooth,
    synchronous: smooth.length === 0 && rules.every((r) => r.mode !== 'queue' && r.limiter.table.synchronous),
    waits: queue.length > 0 || smooth.length > 0,
    guards: ctx.guards.stepsOf(route),
    rejectAmbiguities: rejectMaskOf(ambiguous, route.match.ambiguous),
    refunds: rules.some((r) => r.mode !== 'shadow' && r.refundOn !== undefined),
  };
}

function compileRule(routeName: string, rule: CountedRuleConfig, ctx: CompileContext): CompiledRule {
  const maxQueue = rule.queue?.maxQueue ?? 100;
  const signature = JSON.stringify([routeName, rule.name, rule.mode, maxQueue, rule.policy, rule.lease]);
  let limiter = ctx.previous?.get(signature);
  if (limiter === undefined) {
    const policy = policyOf(rule.policy);
    const store = rule.lease === undefined ? ctx.store : leasedStoreOf(ctx, rule.lease);
    limiter = new Limiter({ policy, store, ...(rule.mode === 'queue' ? { maxQueue } : {}) });
  }
  ctx.limiters.set(signature, limiter);
  const dimension = `${routeName}/${rule.name}`;
  return {
    name: rule.name,
    mode: rule.mode,
    cost: rule.cost,
    limiter,
    identity: ruleIdentity(rule.key, { rule: rule.name, env: ctx.env }),
    maxWaitMs: rule.queue?.maxWaitMs ?? 1000,
    policyItem: policyItem({ name: rule.name, policy: limiter.policy, unit: 'requests', pk: undefined }),
    serviceHead: serviceHead(rule.name),
    keyOf: keyMaker(dimension, identityHider(rule.key, ctx.keyHashing)),
    refundOn: rule.refundOn === undefined || rule.refundOn.length === 0 ? undefined : new Set(rule.refundOn),
  };
}

/** A smooth rule's pace (kept from the previous table while its route, name, queue and policy are unchanged) and what it answers with. */
function compileSmoothRule(routeName: string, rule: SmoothRuleConfig, ctx: CompileContext): CompiledSmoothRule {
  const name = `${routeName}/${rule.name}`;
  const signature = JSON.stringify([routeName, rule.name, rule.policy]);
  const pace = ctx.previousPaces?.get(signature) ?? paceOf(name, rule.policy, ctx.fleetSmooth);
  ctx.paces.set(signature, pace);
  return {
    name: rule.name,
    cost: rule.cost,
    maxWaitMs: rule.queue?.maxWaitMs ?? 1000,
    maxQueue: rule.queue?.maxQueue ?? 100,
    pace,
    policyItem: smoothPolicyItem(rule.name, rule.policy),
    key: name,
  };
}

/**
 * A rule's store keys, its identities passed through `hide` first (when it hides them),
 * remembering recent identities so a repeat client reuses one key string and one hash.
 */
function keyMaker(dimension: string, hide: ((identity: string) => string) | undefined): (identity: string) => string {
  const recent = new Map<string, string>();
  return (identity) => {
    let key = recent.get(identity);
    if (key === undefined) {
      key = storeKey(dimension, hide === undefined ? identity : hide(identity), MAX_KEY_LENGTH);
      if (recent.size >= 4096) recent.clear();
      recent.set(identity, key);
    }
    return key;
  };
}

/** The host name of a Host header in lower case, without its port or the root's final dot (`API.example.com.:80` is `api.example.com`). */
function hostWithoutPort(host: string): string {
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  const name = colon < 0 ? lower : lower.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** A route host `*.example.com` matches any subdomain of example.com; else the host must be equal. */
function hostMatches(pattern: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return host === pattern;
}

/** leasedStoreOf returns a rule's own store of quota leases on the gateway's Redis (one per rule, so that closing its limiter gives its units back). */
function leasedStoreOf(ctx: CompileContext, lease: LeaseOptions): Store {
  if (ctx.leased === undefined)
    throw new Error('a rule with lease: needs a Redis store (the config checks refuse it on memory)');
  return ctx.leased(lease);
}
