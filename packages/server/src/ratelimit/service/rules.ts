/**
 * The descriptor tree compiled for lookups: which rule applies to a request's descriptor, as
 * Envoy's service finds it (at each level: the composite `key_value`, then the wildcards in file
 * order, then the key alone; a rule applies only at the level of the descriptor's last entry),
 * and the floodgate policy each rule is counted with.
 */
import type { DomainSpec } from './config.js';
import type { DescriptorSpec } from './config-descriptors.js';
import type { Policies } from './policies.js';
import type { Rule } from './rule.js';

/** Match is a rule found for one descriptor, with the metric name of the path that found it. */
export interface Match {
  readonly rule: Rule;
  /**
   * `domain.key_value.key` as Envoy's service names its statistics: each level as configured (a
   * wildcard by its pattern, `key_foo*`), never the request's value unless the config asks for it
   * (`value_to_metric` for a level, `detailed_metric` for all).
   */
  readonly metricKey: string;
  /** {@link metricKey} without the domain: the `descriptor` label of the service's metrics. */
  readonly metricPath: string;
  /**
   * The entries the counter is kept under: the request's, with a `share_threshold` wildcard's
   * pattern for its value, and each value the config does not spell out passed through the
   * domain's {@link ValueHider} (so a credential never names a store key).
   */
  readonly counterEntries: readonly DescriptorEntry[];
}

/**
 * ValueHider returns what a request's descriptor value becomes before it names a store key or a
 * metric label (a keyed hash, as the gateway hashes identities); values the config spells out
 * (`value: /api/login`) are not passed through it, being no secret.
 */
export type ValueHider = (value: string) => string;

interface TreeNode {
  readonly spec: DescriptorSpec;
  readonly rule: Rule | undefined;
  readonly children: Level;
  /** `key`, or `key_value` as configured: the node's name in metrics. */
  readonly composite: string;
  /** Whether the node matches one value that the config spells out (no wildcard): that value is no secret. */
  readonly literal: boolean;
  /** The composites of the path down to this node, joined by `.`: the metric path when it names no request value. */
  readonly metricPath: string;
  /** The domain, `.`, then {@link metricPath}. */
  readonly metricKey: string;
  /** Whether a level of the path down to this node names the request's value in metrics (`value_to_metric`). */
  readonly valueInMetric: boolean;
}

interface Level {
  /** Nodes without a wildcard, by composite key (`key_value`, or `key` when no value). */
  readonly byComposite: Map<string, TreeNode>;
  /** Nodes whose value holds a `*`, in file order (the first that matches wins, as in Envoy's service): the composite key split at each `*`. */
  readonly wildcards: Array<{ readonly parts: readonly string[]; readonly node: TreeNode }>;
}

/** DescriptorEntry is one `(key, value)` pair of a request's descriptor. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** DomainRules answers which rule applies to a descriptor of one domain. */
export class DomainRules {
  private readonly root: Level;

  constructor(
    readonly domain: DomainSpec,
    policies: Policies,
    private readonly hide?: ValueHider,
  ) {
    this.root = compileLevel(domain.descriptors, policies, {
      domain: domain.domain,
      metricPath: undefined,
      valueInMetric: false,
    });
  }

  /**
   * match returns the rule for `entries`, or undefined when none applies. At each level, as Envoy's
   * service looks: the composite `key_value`, then the wildcards in file order, then the key alone;
   * a rule applies only at the level of the descriptor's last entry.
   */
  match(entries: readonly DescriptorEntry[]): Match | undefined {
    let level = this.root;
    const found: TreeNode[] = [];
    for (const entry of entries) {
      const node = find(level, entry);
      if (node === undefined) return undefined;
      found.push(node);
      level = node.children;
    }
    const rule = found.at(-1)?.rule;
    return rule === undefined ? undefined : this.matched(rule, entries, found);
  }

  private matched(rule: Rule, entries: readonly DescriptorEntry[], found: readonly TreeNode[]): Match {
    const last = found[found.length - 1]!;
    const detailed = last.spec.detailedMetric;
    // A metric path that names no request value is the node's own, built once with the tree.
    const byValue = detailed || last.valueInMetric;
    let metricPath = byValue ? '' : last.metricPath;
    let counterEntries: DescriptorEntry[] | undefined;
    for (let i = 0; i < found.length; i++) {
      const node = found[i]!;
      const entry = entries[i]!;
      const value = this.hide === undefined || node.literal ? entry.value : this.hide(entry.value);
      if (byValue)
        metricPath += `${i === 0 ? '' : '.'}${detailed || node.spec.valueToMetric ? `${entry.key}_${value}` : node.composite}`;
      const shared = node.spec.shareThreshold && node.spec.value?.includes('*') === true;
      if (shared || value !== entry.value) {
        counterEntries ??= [...entries];
        counterEntries[i] = { key: entry.key, value: shared ? node.spec.value! : value };
      }
    }
    const metricKey = byValue ? `${this.domain.domain}.${metricPath}` : last.metricKey;
    return { rule, metricKey, metricPath, counterEntries: counterEntries ?? entries };
  }
}

function find(level: Level, entry: DescriptorEntry): TreeNode | undefined {
  const composite = `${entry.key}_${entry.value}`;
  const exact = level.byComposite.get(composite);
  if (exact !== undefined) return exact;
  for (const w of level.wildcards) if (globMatches(w.parts, composite)) return w.node;
  return level.byComposite.get(entry.key);
}

/**
 * globMatches returns whether `text` matches the pattern split at its `*`s into `parts` (at least
 * two), each `*` standing for any run of characters. The first part must start the text, the last
 * end it, and the others are found leftmost in order between them: for `*` alone that is exact,
 * and it takes O(text × pattern) time, where a regular expression could backtrack for ever on a
 * client's value against a pattern of several `*`.
 */
export function globMatches(parts: readonly string[], text: string): boolean {
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  const end = text.length - last.length;
  let at = first.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    const found = text.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** Where a level sits: its domain, and the metric path of the node above it (undefined at the root). */
interface LevelPath {
  readonly domain: string;
  readonly metricPath: string | undefined;
  readonly valueInMetric: boolean;
}

function compileLevel(specs: readonly DescriptorSpec[], policies: Policies, at: LevelPath): Level {
  const level: Level = { byComposite: new Map(), wildcards: [] };
  for (const spec of specs) {
    const composite = spec.value === undefined ? spec.key : `${spec.key}_${spec.value}`;
    const metricPath = at.metricPath === undefined ? composite : `${at.metricPath}.${composite}`;
    const valueInMetric = spec.valueToMetric || at.valueInMetric;
    const node: TreeNode = {
      spec,
      composite,
      literal: spec.value !== undefined && !spec.value.includes('*'),
      rule: ruleOf(spec, policies),
      metricPath,
      metricKey: `${at.domain}.${metricPath}`,
      valueInMetric,
      children: compileLevel(spec.descriptors, policies, { domain: at.domain, metricPath, valueInMetric }),
    };
    if (spec.value?.includes('*') === true) level.wildcards.push({ parts: composite.split('*'), node });
    else level.byComposite.set(composite, node);
  }
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
    quotaMode: spec.quotaMode,
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
/** The character codes of the characters {@link SPECIAL} replaces. */
const SPECIAL_CODES: readonly number[] = [0x5c, 0x3d, 0x7c, 0x7b, 0x7d];

function escape(text: string): string {
  // Most texts hold none of the five: found by a scan, cheaper than a replace that changes nothing.
  for (let i = 0; i < text.length; i++)
    if (SPECIAL_CODES.includes(text.charCodeAt(i)))
      return text.replace(SPECIAL, (c) => `\\${c.charCodeAt(0).toString(16)}`);
  return text;
}
