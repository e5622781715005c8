/**
 * Envoy's descriptor config, read as it is: a YAML document per domain with a tree of descriptors
 * (`key`, `value`, `rate_limit`, `shadow_mode`, `detailed_metric`, nested `descriptors`), plus
 * floodgate's choice of algorithm per limit. Reading is strict: an unknown key or a bad value is
 * an error naming the file, line, column and path, and every error is reported at once.
 */
import { LineCounter, isMap, isScalar, isSeq, parseAllDocuments, type Node } from 'yaml';
import { UNITS, unitOf, type RateLimitUnit } from './units.js';

/** DecisionAlgorithm names the policy a limit is counted with; Envoy's own is `fixed-window`. */
export type DecisionAlgorithm = 'fixed-window' | 'sliding-window' | 'gcra' | 'token-bucket';

const ALGORITHMS: readonly DecisionAlgorithm[] = ['fixed-window', 'sliding-window', 'gcra', 'token-bucket'];

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
  /** The value to match; undefined matches any value (each its own counter); `foo*` matches by prefix. */
  readonly value: string | undefined;
  readonly rateLimit: RateLimitSpec | undefined;
  /** Decide and count, but always answer OK. */
  readonly shadowMode: boolean;
  /** Report the request's own value in metrics when this node has no value. */
  readonly detailedMetric: boolean;
  /** Envoy's `quota_mode`: read so such configs load; floodgate answers such limits as any other. */
  readonly quotaMode: boolean;
  readonly descriptors: readonly DescriptorSpec[];
  /** Where the node starts, as `file:line:column`, for messages. */
  readonly at: string;
}

/** DomainSpec is one domain's config. */
export interface DomainSpec {
  readonly domain: string;
  readonly descriptors: readonly DescriptorSpec[];
  /** The file it came from. */
  readonly source: string;
}

/** DescriptorConfig is what {@link parseDescriptorConfig} reads: one or more domains. */
export interface DescriptorConfig {
  readonly domains: readonly DomainSpec[];
}

/** ConfigError is one problem in a config file, with where it is. */
export interface ConfigError {
  readonly source: string;
  /** 1-based line and column. */
  readonly line: number;
  readonly column: number;
  /** Where in the document, e.g. `descriptors[1].rate_limit.unit`. */
  readonly path: string;
  readonly message: string;
}

/** formatConfigError returns `file:line:column: path: message`. */
export function formatConfigError(error: ConfigError): string {
  return `${error.source}:${error.line}:${error.column}: ${error.path === '' ? '' : `${error.path}: `}${error.message}`;
}

const DOMAIN_KEYS = ['domain', 'descriptors'];
const DESCRIPTOR_KEYS = ['key', 'value', 'rate_limit', 'shadow_mode', 'detailed_metric', 'quota_mode', 'descriptors'];
const RATE_LIMIT_KEYS = ['unit', 'requests_per_unit', 'unlimited', 'name', 'replaces', 'algorithm', 'cost'];
const MAX_UINT32 = 4_294_967_295;

/** Reader collects errors while one file is read. */
class Reader {
  readonly errors: ConfigError[] = [];
  constructor(
    readonly source: string,
    private readonly lines: LineCounter,
  ) {}

  fail(node: Node | null | undefined, path: string, message: string): undefined {
    const { line, col } = this.lines.linePos(node?.range?.[0] ?? 0);
    this.errors.push({ source: this.source, line, column: col, path, message });
    return undefined;
  }

  where(node: Node): string {
    const { line, col } = this.lines.linePos(node.range?.[0] ?? 0);
    return `${this.source}:${line}:${col}`;
  }

  /** fields returns a mapping's values by key, reporting a non-mapping and keys not in `allowed`. */
  fields(node: Node | null, path: string, allowed: readonly string[]): Map<string, Node | null> | undefined {
    if (!isMap(node)) return this.fail(node, path, `must be a mapping with keys among ${allowed.join(', ')}`);
    const out = new Map<string, Node | null>();
    for (const pair of node.items) {
      const keyNode = pair.key as Node | null;
      const key = isScalar(keyNode) ? String(keyNode.value) : undefined;
      if (key === undefined || !allowed.includes(key)) {
        this.fail(
          keyNode,
          join(path, key ?? '?'),
          `unknown key ${JSON.stringify(key ?? '?')}; expected one of ${allowed.join(', ')}`,
        );
        continue;
      }
      out.set(key, pair.value as Node | null);
    }
    return out;
  }

  text(node: Node | null | undefined, path: string, what: string): string | undefined {
    if (!isScalar(node) || node.value === null || typeof node.value === 'object')
      return this.fail(node, path, `must be ${what}`);
    // A value such as `010` or `1.50` is the text written, as Envoy's service reads it into a string.
    return typeof node.value === 'string' ? node.value : (node.source ?? String(node.value));
  }

  flag(node: Node | null | undefined, path: string): boolean {
    if (node === undefined) return false;
    if (isScalar(node) && typeof node.value === 'boolean') return node.value;
    this.fail(node, path, 'must be true or false');
    return false;
  }

  count(node: Node | null | undefined, path: string): number | undefined {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_UINT32) return v;
    return this.fail(node, path, `must be a whole number from 0 to ${MAX_UINT32}`);
  }

  positive(node: Node | null | undefined, path: string): number | undefined {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= MAX_UINT32) return v;
    return this.fail(node, path, `must be a number above 0 and at most ${MAX_UINT32}`);
  }
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * parseDescriptorConfig returns the domains of one config file (`text`, named `source` in
 * messages), or every error found in it. A file may hold several YAML documents, one domain each.
 *
 * @example
 * const parsed = parseDescriptorConfig(readFileSync(path, 'utf8'), path);
 * if ('errors' in parsed) throw new Error(parsed.errors.map(formatConfigError).join('\n'));
 * const service = createRateLimitService({ domains: parsed.config.domains });
 */
export function parseDescriptorConfig(
  text: string,
  source: string,
): { config: DescriptorConfig } | { errors: ConfigError[] } {
  const lines = new LineCounter();
  const reader = new Reader(source, lines);
  const domains: DomainSpec[] = [];
  for (const doc of parseAllDocuments(text, { lineCounter: lines, prettyErrors: false })) {
    for (const e of doc.errors) {
      const pos = lines.linePos(e.pos[0]);
      reader.errors.push({ source, line: pos.line, column: pos.col, path: '', message: e.message.split('\n')[0]! });
    }
    if (doc.errors.length > 0 || doc.contents === null) continue;
    const domain = readDomain(reader, doc.contents);
    if (domain !== undefined) domains.push(domain);
  }
  checkUniqueDomains(reader, domains);
  if (reader.errors.length === 0 && domains.length === 0)
    reader.errors.push({
      source,
      line: 1,
      column: 1,
      path: '',
      message: 'holds no domain: expected `domain:` and `descriptors:`',
    });
  return reader.errors.length > 0 ? { errors: reader.errors } : { config: { domains } };
}

/** mergeDescriptorConfigs returns the domains of several parsed files, or an error per domain defined twice. */
export function mergeDescriptorConfigs(
  configs: readonly DescriptorConfig[],
): { config: DescriptorConfig } | { errors: ConfigError[] } {
  const domains = configs.flatMap((c) => c.domains);
  const errors: ConfigError[] = [];
  const seen = new Map<string, DomainSpec>();
  for (const d of domains) {
    const first = seen.get(d.domain);
    if (first !== undefined)
      errors.push({
        source: d.source,
        line: 1,
        column: 1,
        path: 'domain',
        message: `domain ${JSON.stringify(d.domain)} is already defined in ${first.source}`,
      });
    else seen.set(d.domain, d);
  }
  return errors.length > 0 ? { errors } : { config: { domains } };
}

function checkUniqueDomains(reader: Reader, domains: readonly DomainSpec[]): void {
  const seen = new Set<string>();
  for (const d of domains) {
    if (seen.has(d.domain))
      reader.errors.push({
        source: reader.source,
        line: 1,
        column: 1,
        path: 'domain',
        message: `domain ${JSON.stringify(d.domain)} is defined twice in this file`,
      });
    seen.add(d.domain);
  }
}

function readDomain(reader: Reader, node: Node): DomainSpec | undefined {
  const fields = reader.fields(node, '', DOMAIN_KEYS);
  if (fields === undefined) return undefined;
  const domainNode = fields.get('domain');
  const domain = fields.has('domain')
    ? reader.text(domainNode, 'domain', 'a non-empty string')
    : reader.fail(node, 'domain', 'is required');
  if (domain === '') reader.fail(domainNode, 'domain', 'must be a non-empty string');
  const descriptors = readDescriptors(reader, fields.get('descriptors'), 'descriptors');
  return domain === undefined || domain === '' ? undefined : { domain, descriptors, source: reader.source };
}

function readDescriptors(reader: Reader, node: Node | null | undefined, path: string): DescriptorSpec[] {
  if (node === undefined || (isScalar(node) && node.value === null)) return [];
  if (!isSeq(node)) {
    reader.fail(node, path, 'must be a list of descriptors');
    return [];
  }
  const out: DescriptorSpec[] = [];
  const seen = new Set<string>();
  node.items.forEach((item, i) => {
    const d = readDescriptor(reader, item as Node | null, join(path, i));
    if (d === undefined) return;
    const id = `${d.key}\u0000${d.value ?? ''}\u0000${d.value === undefined ? 'any' : 'value'}`;
    if (seen.has(id))
      reader.fail(
        item as Node,
        join(path, i),
        `duplicate descriptor: key ${JSON.stringify(d.key)}${d.value === undefined ? ' with no value' : ` and value ${JSON.stringify(d.value)}`} is already defined at this level`,
      );
    seen.add(id);
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
  const value = f.has('value') ? reader.text(f.get('value'), join(path, 'value'), 'a string') : undefined;
  const valueNode = f.get('value');
  if (value !== undefined && value.indexOf('*') >= 0 && value.indexOf('*') !== value.length - 1) {
    reader.fail(
      valueNode,
      join(path, 'value'),
      'may hold `*` only as its last character (a prefix wildcard such as `foo*`)',
    );
  }
  const rateLimit = f.has('rate_limit')
    ? readRateLimit(reader, f.get('rate_limit') ?? null, join(path, 'rate_limit'))
    : undefined;
  const spec: DescriptorSpec = {
    key: key ?? '',
    value,
    rateLimit,
    shadowMode: reader.flag(f.get('shadow_mode'), join(path, 'shadow_mode')),
    detailedMetric: reader.flag(f.get('detailed_metric'), join(path, 'detailed_metric')),
    quotaMode: reader.flag(f.get('quota_mode'), join(path, 'quota_mode')),
    descriptors: readDescriptors(reader, f.get('descriptors'), join(path, 'descriptors')),
    at: reader.where(node),
  };
  return key === undefined || key === '' ? undefined : spec;
}

function readRateLimit(reader: Reader, node: Node | null, path: string): RateLimitSpec | undefined {
  const f = reader.fields(node, path, RATE_LIMIT_KEYS);
  if (f === undefined) return undefined;
  const unlimited = reader.flag(f.get('unlimited'), join(path, 'unlimited'));
  let unit: RateLimitUnit | undefined;
  if (f.has('unit')) {
    const text = reader.text(f.get('unit'), join(path, 'unit'), `one of ${UNITS.join(', ')}`);
    unit = unitOf(text);
    if (text !== undefined && unit === undefined)
      reader.fail(
        f.get('unit'),
        join(path, 'unit'),
        `unknown unit ${JSON.stringify(text)}; expected one of ${UNITS.join(', ')}`,
      );
  } else if (!unlimited) reader.fail(node, join(path, 'unit'), 'is required (unless unlimited: true)');
  let requestsPerUnit: number | undefined;
  if (f.has('requests_per_unit'))
    requestsPerUnit = reader.count(f.get('requests_per_unit'), join(path, 'requests_per_unit'));
  else if (!unlimited) reader.fail(node, join(path, 'requests_per_unit'), 'is required (unless unlimited: true)');
  const name = f.has('name') ? reader.text(f.get('name'), join(path, 'name'), 'a string') : undefined;
  const replaces = readReplaces(reader, f.get('replaces'), join(path, 'replaces'));
  const algorithm = readAlgorithm(reader, f.get('algorithm'), join(path, 'algorithm'));
  const cost = f.has('cost') ? (reader.positive(f.get('cost'), join(path, 'cost')) ?? 1) : 1;
  return { unit, requestsPerUnit, unlimited, name, replaces, algorithm, cost };
}

function readReplaces(reader: Reader, node: Node | null | undefined, path: string): string[] {
  if (node === undefined) return [];
  if (!isSeq(node)) {
    reader.fail(node, path, 'must be a list of `- name: <limit name>`');
    return [];
  }
  const names: string[] = [];
  node.items.forEach((item, i) => {
    const f = reader.fields(item as Node | null, join(path, i), ['name']);
    if (f === undefined) return;
    const name = f.has('name')
      ? reader.text(f.get('name'), join(join(path, i), 'name'), 'a non-empty string')
      : reader.fail(item as Node, join(join(path, i), 'name'), 'is required');
    if (name === '') reader.fail(f.get('name'), join(join(path, i), 'name'), 'must be a non-empty string');
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
