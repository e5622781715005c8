/**
 * Envoy's descriptor config, read as envoyproxy/ratelimit reads it: a YAML document per domain
 * with a tree of descriptors (`key`, `value` with `*` wildcards anywhere, `rate_limit`,
 * `shadow_mode`, `quota_mode`, `detailed_metric`, `value_to_metric`, `share_threshold`,
 * `metadata`, nested `descriptors`), plus floodgate's choice of algorithm and cost per limit.
 * What it refuses, this refuses; reading is strict besides: an unknown key or a bad value is an
 * error naming the file, line, column and path, and every error is reported at once.
 */
import { LineCounter, parseAllDocuments, type Node } from 'yaml';
import { Reader, type ConfigError } from './config-reader.js';
import { compositeKey, readDescriptors, type DescriptorSpec } from './config-descriptors.js';
import { readQuota } from '../quota/config.js';
import type { QuotaSpec } from '../quota/spec.js';
import { readSmoothLimits, type SmoothLimitSpec } from './smooth-config.js';

export type { ConfigError } from './config-reader.js';

/** DomainSpec is one domain's config. */
export interface DomainSpec {
  readonly domain: string;
  readonly descriptors: readonly DescriptorSpec[];
  /** The domain's `quota:` section, for Envoy's Rate Limit Quota Service (RLQS); undefined without one. */
  readonly quota?: QuotaSpec | undefined;
  /** The domain's `smooth_limits:` section (Guava's limiters, answered as waits by `POST /v1/reserve`); undefined without one. */
  readonly smoothLimits?: readonly SmoothLimitSpec[] | undefined;
  /** The file it came from. */
  readonly source: string;
  /** Where its `domain:` value is in that file (1-based), for messages about the domain. */
  readonly line: number;
  readonly column: number;
}

/** DescriptorConfig is what {@link parseDescriptorConfig} reads: one or more domains. */
export interface DescriptorConfig {
  readonly domains: readonly DomainSpec[];
}

/** formatConfigError returns `file:line:column: path: message`. */
export function formatConfigError(error: ConfigError): string {
  return `${error.source}:${error.line}:${error.column}: ${error.path === '' ? '' : `${error.path}: `}${error.message}`;
}

const DOMAIN_KEYS = ['domain', 'descriptors', 'quota', 'smooth_limits'];
/** MAX_SYNTAX_ERRORS is how many YAML syntax errors of a file are listed; the rest are counted in one more. */
const MAX_SYNTAX_ERRORS = 20;
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
  let syntaxErrors = 0;
  for (const doc of parseAllDocuments(text, { lineCounter: lines, prettyErrors: false })) {
    for (const e of doc.errors) {
      // Garbage can hold a syntax error per character: the first ones are listed, the rest counted.
      if (++syntaxErrors > MAX_SYNTAX_ERRORS) continue;
      const pos = lines.linePos(e.pos[0]);
      reader.errors.push({ source, line: pos.line, column: pos.col, path: '', message: e.message.split('\n')[0]! });
    }
    if (doc.errors.length > 0 || doc.contents === null) continue;
    const domain = readDomain(reader, doc.contents);
    if (domain !== undefined) domains.push(domain);
  }
  if (syntaxErrors > MAX_SYNTAX_ERRORS)
    reader.errors.push({
      source,
      line: reader.errors.at(-1)!.line,
      column: 1,
      path: '',
      message: `${syntaxErrors - MAX_SYNTAX_ERRORS} more YAML syntax errors after these; fix the first ones, the later ones often follow from them`,
    });
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

/**
 * mergeDescriptorConfigs returns the domains of several parsed files, or an error per domain
 * defined twice. With `mergeDomains` (envoyproxy/ratelimit's `MERGE_DOMAIN_CONFIG`) a domain in
 * several files is one domain with the descriptors of each, in file order; a top-level descriptor
 * whose `key_value` another file defined already is then the error, at its place.
 */
export function mergeDescriptorConfigs(
  configs: readonly DescriptorConfig[],
  options: { readonly mergeDomains?: boolean } = {},
): { config: DescriptorConfig } | { errors: ConfigError[] } {
  const errors: ConfigError[] = [];
  const seen = new Map<string, DomainSpec>();
  for (const d of configs.flatMap((c) => c.domains)) {
    const first = seen.get(d.domain);
    if (first === undefined) seen.set(d.domain, d);
    else if (options.mergeDomains === true) seen.set(d.domain, mergeDomain(first, d, errors));
    else
      errors.push({
        source: d.source,
        line: d.line,
        column: d.column,
        path: 'domain',
        message: `domain ${JSON.stringify(d.domain)} is already defined at ${first.source}:${first.line}:${first.column}`,
      });
  }
  return errors.length > 0 ? { errors } : { config: { domains: [...seen.values()] } };
}

function mergeDomain(into: DomainSpec, more: DomainSpec, errors: ConfigError[]): DomainSpec {
  const taken = new Map(into.descriptors.map((d) => [compositeKey(d.key, d.value), d.at]));
  more.descriptors.forEach((d, i) => {
    const id = compositeKey(d.key, d.value);
    const first = taken.get(id);
    if (first === undefined) {
      taken.set(id, d.at);
      return;
    }
    const at = /:(\d+):(\d+)$/.exec(d.at)!;
    errors.push({
      source: more.source,
      line: Number(at[1]),
      column: Number(at[2]),
      path: `descriptors[${i}]`,
      message: `duplicate descriptor: ${JSON.stringify(id)} of domain ${JSON.stringify(more.domain)} is already defined at ${first}`,
    });
  });
  if (into.quota !== undefined && more.quota !== undefined)
    errors.push({
      source: more.source,
      line: more.line,
      column: more.column,
      path: 'quota',
      message: `domain ${JSON.stringify(more.domain)} has a quota section in ${into.source} already; give it once`,
    });
  if (into.smoothLimits !== undefined && more.smoothLimits !== undefined)
    errors.push({
      source: more.source,
      line: more.line,
      column: more.column,
      path: 'smooth_limits',
      message: `domain ${JSON.stringify(more.domain)} has a smooth_limits section in ${into.source} already; give it once`,
    });
  return {
    ...into,
    descriptors: [...into.descriptors, ...more.descriptors],
    quota: into.quota ?? more.quota,
    smoothLimits: into.smoothLimits ?? more.smoothLimits,
  };
}

function checkUniqueDomains(reader: Reader, domains: readonly DomainSpec[]): void {
  const seen = new Map<string, DomainSpec>();
  for (const d of domains) {
    const first = seen.get(d.domain);
    if (first !== undefined)
      reader.errors.push({
        source: reader.source,
        line: d.line,
        column: d.column,
        path: 'domain',
        message: `domain ${JSON.stringify(d.domain)} is defined twice in this file (first at line ${first.line})`,
      });
    else seen.set(d.domain, d);
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
  const quota = fields.has('quota') ? readQuota(reader, fields.get('quota') ?? null, 'quota') : undefined;
  const smoothLimits = fields.has('smooth_limits')
    ? readSmoothLimits(reader, fields.get('smooth_limits'), 'smooth_limits')
    : undefined;
  if (domain === undefined || domain === '') return undefined;
  const { line, col } = reader.position(domainNode);
  return {
    domain,
    descriptors,
    ...(quota === undefined ? {} : { quota }),
    ...(smoothLimits === undefined ? {} : { smoothLimits }),
    source: reader.source,
    line,
    column: col,
  };
}
