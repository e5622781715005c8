/**
 * Reading a domain's descriptor tree and its `rate_limit` blocks, with what envoyproxy/ratelimit
 * checks (a duplicate `key_value` at one level, an unknown unit, a unit on an unlimited limit, a
 * `replaces` naming nothing or its own limit) and what floodgate adds (`algorithm`, `cost`). The
 * specs it reads them into are declared here, below the domain reader (config.ts) and the rules.
 */
import { isScalar, isSeq, type Node } from 'yaml';
import { join, type Reader } from './config-reader.js';
import { UNITS, unitOf, type RateLimitUnit } from './units.js';

/** DecisionAlgorithm names the policy a limit is counted with; Envoy's own is `fixed-window`. */
export type DecisionAlgorithm = 'fixed-window' | 'sliding-window' | 'gcra' | 'token-bucket';

/** RateLimitSpec is one `rate_limit` block. */
export interface RateLimitSpec {
  /** The unit; undefined only for an unlimited block that gives none. */
  readonly unit: RateLimitUnit | undefined;
  /** Requests admitted per unit (0 refuses every request); undefined only when unlimited. */
  readonly requestsPerUnit: number | undefined;
  /** True: never limited, and never counted. */
  readonly unlimited: boolean;
  /** The limit's name, which `replaces` of another limit may name. */
  readonly name: string | undefined;
  /** Names of the limits this one replaces when both apply to one request. */
  readonly replaces: readonly string[];
  /** floodgate's extension: how the limit is counted (default `fixed-window`, Envoy's). */
  readonly algorithm: DecisionAlgorithm;
  /** floodgate's extension: what one hit charges (a positive number, default 1); `hits_addend: n` charges `n * cost`. */
  readonly cost: number;
}

/** DescriptorSpec is one node of a domain's descriptor tree. */
export interface DescriptorSpec {
  readonly key: string;
  /**
   * The value to match; undefined (or `""`, as in Envoy's service) matches any value, each its own
   * counter; a `*` anywhere matches any run of characters (`foo*`, `*bar`, `a*b*c`).
   */
  readonly value: string | undefined;
  readonly rateLimit: RateLimitSpec | undefined;
  /** Decide and count, but always answer OK. */
  readonly shadowMode: boolean;
  /** Name metrics by the request's own values, at every level (Envoy's `detailed_metric`). */
  readonly detailedMetric: boolean;
  /** Name this level in metrics by the request's own value (Envoy's `value_to_metric`). */
  readonly valueToMetric: boolean;
  /** Every value this wildcard matches shares one counter (Envoy's `share_threshold`). */
  readonly shareThreshold: boolean;
  /** Envoy's `quota_mode`: decided and counted, but a limit over quota answers OK. */
  readonly quotaMode: boolean;
  readonly descriptors: readonly DescriptorSpec[];
  /** Where the node starts, as `file:line:column`, for messages. */
  readonly at: string;
}

const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'shadow_mode',
  'quota_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  'descriptors',
];
/** ALGORITHMS lists the algorithms a `rate_limit.algorithm` may name. */
export const ALGORITHMS: readonly DecisionAlgorithm[] = ['fixed-window', 'sliding-window', 'gcra', 'token-bucket'];

const RATE_LIMIT_KEYS = ['unit', 'requests_per_unit', 'unlimited', 'name', 'replaces', 'algorithm', 'cost'];

/**
 * compositeKey returns a descriptor's identity at its level as Envoy's service builds it: `key`,
 * or `key_value` when it has a value. Two descriptors of one level with the same one are refused,
 * even when the `_` falls elsewhere (`a_b` + `c` and `a` + `b_c`), as there.
 */
export function compositeKey(key: string, value: string | undefined): string {
  return value === undefined ? key : `${key}_${value}`;
}

/** readDescriptors returns a level's descriptors, reporting each one whose composite key is taken. */
export function readDescriptors(reader: Reader, node: Node | null | undefined, path: string): DescriptorSpec[] {
  if (node === undefined || (isScalar(node) && node.value === null)) return [];
  if (!isSeq(node)) {
    reader.fail(node, path, 'must be a list of descriptors');
    return [];
  }
  const out: DescriptorSpec[] = [];
  const seen = new Map<string, string>();
  node.items.forEach((item, i) => {
    const d = readDescriptor(reader, item as Node | null, join(path, i));
    if (d === undefined) return;
    const id = compositeKey(d.key, d.value);
    const first = seen.get(id);
    if (first !== undefined)
      reader.fail(
        item as Node,
        join(path, i),
        `duplicate descriptor: ${JSON.stringify(id)} (key and value joined by "_", as envoyproxy/ratelimit names them) is already defined at this level, at ${first}`,
      );
    else seen.set(id, d.at);
    out.push(d);
  });
  return out;
}

function readDescriptor(reader: Reader, node: Node | null, path: string): DescriptorSpec | undefined {
  const f = reader.fields(node, path, DESCRIPTOR_KEYS);
  if (f === undefined || node === null) return undefined;
  const key = f.has('key')
    ? reader.text(f.get('key'), join(path, 'key'), 'a non-empty string')
    : reader.fail(node, join(path, 'key'), 'is required');
  if (key === '') reader.fail(f.get('key'), join(path, 'key'), 'must be a non-empty string');
  const written = f.has('value') ? reader.text(f.get('value'), join(path, 'value'), 'a string') : undefined;
  // An empty value is no value, as in Envoy's service: the key alone matches.
  const value = written === '' ? undefined : written;
  const rateLimit = f.has('rate_limit')
    ? readRateLimit(reader, f.get('rate_limit') ?? null, join(path, 'rate_limit'))
    : undefined;
  const spec: DescriptorSpec = {
    key: key ?? '',
    value,
    rateLimit,
    shadowMode: reader.flag(f.get('shadow_mode'), join(path, 'shadow_mode')),
    quotaMode: reader.flag(f.get('quota_mode'), join(path, 'quota_mode')),
    detailedMetric: reader.flag(f.get('detailed_metric'), join(path, 'detailed_metric')),
    valueToMetric: reader.flag(f.get('value_to_metric'), join(path, 'value_to_metric')),
    shareThreshold: reader.flag(f.get('share_threshold'), join(path, 'share_threshold')),
    descriptors: readDescriptors(reader, f.get('descriptors'), join(path, 'descriptors')),
    at: reader.where(node),
  };
  return key === undefined || key === '' ? undefined : spec;
}

function readUnit(
  reader: Reader,
  f: Map<string, Node | null>,
  path: string,
  unlimited: boolean,
): RateLimitUnit | undefined {
  const node = f.get('unit');
  const text = reader.text(node, join(path, 'unit'), `one of ${UNITS.join(', ')}`);
  const unit = unitOf(text);
  if (text !== undefined && unit === undefined)
    reader.fail(node, join(path, 'unit'), `unknown unit ${JSON.stringify(text)}; expected one of ${UNITS.join(', ')}`);
  else if (unit !== undefined && unlimited)
    reader.fail(node, join(path, 'unit'), 'must not be given with unlimited: true (an unlimited limit has no unit)');
  return unit;
}

function readRateLimit(reader: Reader, node: Node | null, path: string): RateLimitSpec | undefined {
  const f = reader.fields(node, path, RATE_LIMIT_KEYS);
  if (f === undefined) return undefined;
  const unlimited = reader.flag(f.get('unlimited'), join(path, 'unlimited'));
  if (!f.has('unit') && !unlimited) reader.fail(node, join(path, 'unit'), 'is required (unless unlimited: true)');
  const unit = f.has('unit') ? readUnit(reader, f, path, unlimited) : undefined;
  // Envoy's service reads a missing requests_per_unit as 0: the limit refuses every request.
  const requestsPerUnit = f.has('requests_per_unit')
    ? reader.count(f.get('requests_per_unit'), join(path, 'requests_per_unit'))
    : unlimited
      ? undefined
      : 0;
  const name = f.has('name') ? reader.text(f.get('name'), join(path, 'name'), 'a string') : undefined;
  const replaces = readReplaces(reader, f.get('replaces'), join(path, 'replaces'), name);
  const algorithm = readAlgorithm(reader, f.get('algorithm'), join(path, 'algorithm'));
  const cost = f.has('cost') ? (reader.positive(f.get('cost'), join(path, 'cost')) ?? 1) : 1;
  return { unit, requestsPerUnit, unlimited, name, replaces, algorithm, cost };
}

function readReplaces(reader: Reader, node: Node | null | undefined, path: string, own: string | undefined): string[] {
  if (node === undefined) return [];
  if (!isSeq(node)) {
    reader.fail(node, path, 'must be a list of `- name: <limit name>`');
    return [];
  }
  const names: string[] = [];
  node.items.forEach((item, i) => {
    const at = join(path, i);
    const f = reader.fields(item as Node | null, at, ['name']);
    if (f === undefined) return;
    const name = f.has('name')
      ? reader.text(f.get('name'), join(at, 'name'), 'a non-empty string')
      : reader.fail(item as Node, join(at, 'name'), 'is required');
    if (name === '') reader.fail(f.get('name'), join(at, 'name'), 'must be a non-empty string');
    else if (name !== undefined && name === own)
      reader.fail(
        f.get('name'),
        join(at, 'name'),
        `names this limit itself (${JSON.stringify(own)}); a limit cannot replace itself`,
      );
    else if (name !== undefined) names.push(name);
  });
  return names;
}

function readAlgorithm(reader: Reader, node: Node | null | undefined, path: string): DecisionAlgorithm {
  if (node === undefined) return 'fixed-window';
  const text = reader.text(node, path, `one of ${ALGORITHMS.join(', ')}`);
  if (text !== undefined && (ALGORITHMS as readonly string[]).includes(text)) return text as DecisionAlgorithm;
  if (text !== undefined)
    reader.fail(node, path, `unknown algorithm ${JSON.stringify(text)}; expected one of ${ALGORITHMS.join(', ')}`);
  return 'fixed-window';
}
