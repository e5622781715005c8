/**
 * The descriptor tree compiled for lookups: which rule applies to a request's descriptor, as
 * Envoy's service finds it (the most specific match at each level: key and value, then a value
 * prefix `foo*`, then the key alone; a rule applies only at the level of the descriptor's last
 * entry), and the floodgate policy each rule is counted with.
 */
import { fixedWindow, gcra, slidingWindowCounter, tokenBucket, type Algorithm } from 'floodgate';
import type { DecisionAlgorithm, DescriptorSpec, DomainSpec } from './config.js';
import { UNIT_MS, type RateLimitUnit } from './units.js';

/** Rule is one configured (or requested) limit, ready to decide with. */
export interface Rule {
  /** Requests per unit; 0 refuses every request. */
  readonly requestsPerUnit: number;
  /** Undefined only for an unlimited rule given no unit. */
  readonly unit: RateLimitUnit | undefined;
  readonly unlimited: boolean;
  readonly name: string | undefined;
  readonly replaces: readonly string[];
  readonly shadowMode: boolean;
  /** What one hit charges (`rate_limit.cost`, default 1). */
  readonly cost: number;
  /** The policy counting it; undefined when unlimited or when `requestsPerUnit` is 0. */
  readonly policy: Algorithm | undefined;
}

/** Match is a rule found for one descriptor, with the metric name of the path that found it. */
export interface Match {
  readonly rule: Rule;
  /** `domain.key_value.key` as Envoy's service names its statistics (`detailed_metric` adds values). */
  readonly metricKey: string;
}

interface TreeNode {
  readonly spec: DescriptorSpec;
  readonly rule: Rule | undefined;
  readonly children: Level;
}

interface Level {
  /** Nodes with a value, by `key\0value`. */
  readonly exact: Map<string, TreeNode>;
  /** Nodes whose value ends in `*`, longest prefix first. */
  readonly prefixed: Array<{ readonly key: string; readonly prefix: string; readonly node: TreeNode }>;
  /** Nodes with no value, by key. */
  readonly any: Map<string, TreeNode>;
}

/** DescriptorEntry is one `(key, value)` pair of a request's descriptor. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** MAX_SHARED is how many distinct policies (and override rules) are kept for reuse; past it, each is made anew. */
export const MAX_SHARED = 4096;

/**
 * Policies makes one policy per (algorithm, requests per unit, unit), shared by every rule that
 * has them. Requests can name limits of their own (overrides), so at most {@link MAX_SHARED}
 * distinct overrides are accepted, and no table, limiter or cache grows past that.
 */
export class Policies {
  private readonly made = new Map<string, Algorithm>();
  private readonly overrides = new Map<string, Rule>();

  /** policyOf returns the policy admitting `requestsPerUnit` per `unit` under `algorithm`; needs `requestsPerUnit` > 0. */
  policyOf(algorithm: DecisionAlgorithm, requestsPerUnit: number, unit: RateLimitUnit): Algorithm {
    const id = `${algorithm}/${requestsPerUnit}/${unit}`;
    let policy = this.made.get(id);
    if (policy === undefined) {
      policy = makePolicy(algorithm, requestsPerUnit, UNIT_MS[unit]);
      if (this.made.size < MAX_SHARED) this.made.set(id, policy);
    }
    return policy;
  }

  /**
   * overrideRule returns the rule for a request's own `limit` override: Envoy's fixed window, not
   * shadowed; undefined when {@link MAX_SHARED} other overrides are in use already.
   */
  overrideRule(requestsPerUnit: number, unit: RateLimitUnit): Rule | undefined {
    const id = `${requestsPerUnit}/${unit}`;
    let rule = this.overrides.get(id);
    if (rule === undefined) {
      if (this.overrides.size >= MAX_SHARED) return undefined;
      rule = {
        requestsPerUnit,
        unit,
        unlimited: false,
        name: undefined,
        replaces: [],
        shadowMode: false,
        cost: 1,
        policy: requestsPerUnit > 0 ? this.policyOf('fixed-window', requestsPerUnit, unit) : undefined,
      };
      this.overrides.set(id, rule);
    }
    return rule;
  }
}

function makePolicy(algorithm: DecisionAlgorithm, limit: number, windowMs: number): Algorithm {
  switch (algorithm) {
    case 'fixed-window':
      return fixedWindow({ limit, windowMs });
    case 'sliding-window':
      return slidingWindowCounter({ limit, windowMs });
    case 'token-bucket':
      return tokenBucket({ capacity: limit, refillPerSecond: (limit * 1000) / windowMs });
    case 'gcra':
      return gcra({ rate: limit, periodMs: windowMs, maxBurst: limit - 1 });
  }
}

/** DomainRules answers which rule applies to a descriptor of one domain. */
export class DomainRules {
  private readonly root: Level;

  constructor(
    readonly domain: DomainSpec,
    policies: Policies,
  ) {
    this.root = compileLevel(domain.descriptors, policies);
  }

  /** match returns the rule for `entries` and its metric name, or undefined when none applies. */
  match(entries: readonly DescriptorEntry[]): Match | undefined {
    let level = this.root;
    let metricKey = this.domain.domain;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const node = find(level, entry);
      if (node === undefined) return undefined;
      const named =
        node.spec.value !== undefined || node.spec.detailedMetric ? `${entry.key}_${entry.value}` : entry.key;
      metricKey += `.${named}`;
      if (i === entries.length - 1) return node.rule === undefined ? undefined : { rule: node.rule, metricKey };
      level = node.children;
    }
    return undefined;
  }
}

function find(level: Level, entry: DescriptorEntry): TreeNode | undefined {
  const exact = level.exact.get(`${entry.key}\u0000${entry.value}`);
  if (exact !== undefined) return exact;
  for (const p of level.prefixed) {
    if (p.key === entry.key && entry.value.startsWith(p.prefix)) return p.node;
  }
  return level.any.get(entry.key);
}

function compileLevel(specs: readonly DescriptorSpec[], policies: Policies): Level {
  const level: Level = { exact: new Map(), prefixed: [], any: new Map() };
  for (const spec of specs) {
    const node: TreeNode = { spec, rule: ruleOf(spec, policies), children: compileLevel(spec.descriptors, policies) };
    if (spec.value === undefined) level.any.set(spec.key, node);
    else if (spec.value.endsWith('*')) level.prefixed.push({ key: spec.key, prefix: spec.value.slice(0, -1), node });
    else level.exact.set(`${spec.key}\u0000${spec.value}`, node);
  }
  level.prefixed.sort((a, b) => b.prefix.length - a.prefix.length);
  return level;
}

function ruleOf(spec: DescriptorSpec, policies: Policies): Rule | undefined {
  const r = spec.rateLimit;
  if (r === undefined) return undefined;
  const requestsPerUnit = r.requestsPerUnit ?? 0;
  const limited = !r.unlimited && requestsPerUnit > 0 && r.unit !== undefined;
  return {
    requestsPerUnit,
    unit: r.unit,
    unlimited: r.unlimited,
    name: r.name,
    replaces: r.replaces,
    shadowMode: spec.shadowMode,
    cost: r.cost,
    policy: limited ? policies.policyOf(r.algorithm, requestsPerUnit, r.unit!) : undefined,
  };
}

/**
 * counterKey returns the store key of a descriptor's counter: the domain as a `{hash tag}` (so
 * every counter of a domain shares a Redis Cluster slot, and one request is one script), then
 * each entry as `key=value`, separated by `|`, with `\`, `=`, `|`, `{` and `}` escaped.
 */
export function counterKey(domain: string, entries: readonly DescriptorEntry[]): string {
  let key = `{${escape(domain)}}`;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    key += `${i === 0 ? '' : '|'}${escape(e.key)}=${escape(e.value)}`;
  }
  return key;
}

const SPECIAL = /[\\=|{}]/g;

function escape(text: string): string {
  return text.replace(SPECIAL, (c) => `\\${c.charCodeAt(0).toString(16)}`);
}
