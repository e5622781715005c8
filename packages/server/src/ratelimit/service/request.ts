/**
 * Reading a rate limit request, from gRPC (Envoy's `RateLimitRequest`, field names as in the
 * proto) or JSON (the same names, or proto3 JSON's lowerCamelCase), into a checked
 * {@link DecisionRequest}. Anything malformed is a {@link DecisionError} `INVALID_REQUEST` naming the field.
 */
import type { DescriptorEntry } from './rules.js';
import { unitOf, type RateLimitUnit } from './units.js';

/** DecisionErrorCode is the stable code of a {@link DecisionError}. */
export type DecisionErrorCode = 'INVALID_REQUEST' | 'STORE_FAILED';

/**
 * DecisionError is what the decision service throws: `INVALID_REQUEST` for a malformed request
 * (gRPC `INVALID_ARGUMENT`, HTTP 400), `STORE_FAILED` when the store could not decide (gRPC
 * `UNAVAILABLE`, HTTP 503; the store's error is the `cause`). `field` names the offending field.
 */
export class DecisionError extends Error {
  readonly code: DecisionErrorCode;
  readonly field: string | undefined;

  constructor(code: DecisionErrorCode, message: string, field?: string) {
    super(message);
    this.name = 'DecisionError';
    this.code = code;
    this.field = field;
  }
}

/** RequestDescriptor is one checked descriptor of a request. */
export interface RequestDescriptor {
  readonly entries: readonly DescriptorEntry[];
  /** The request's own limit, replacing the configured one (Envoy's `limit` override). */
  readonly limit: { readonly requestsPerUnit: number; readonly unit: RateLimitUnit } | undefined;
  /** This descriptor's hits, when the request set them; 0 asks without counting. */
  readonly hitsAddend: number | undefined;
}

/** DecisionRequest is a checked rate limit request. */
export interface DecisionRequest {
  readonly domain: string;
  readonly descriptors: readonly RequestDescriptor[];
  /** Hits per descriptor without its own (Envoy's `hits_addend`; 0 or absent means 1). */
  readonly hitsAddend: number;
}

/** Bounds on a request, so a hostile one costs little. */
export const REQUEST_LIMITS = Object.freeze({
  maxDescriptors: 64,
  maxEntries: 32,
  maxTextLength: 1024,
  /** The largest hits_addend accepted: uint32's maximum, the request field's own range. */
  maxHitsAddend: 4_294_967_295,
});

type Raw = Record<string, unknown>;

function field(raw: Raw, snake: string, camel: string): unknown {
  return raw[snake] !== undefined ? raw[snake] : raw[camel];
}

function invalid(path: string, message: string): DecisionError {
  return new DecisionError('INVALID_REQUEST', `${path} ${message}`, path);
}

/** ParseOptions says how {@link parseDecisionRequest} reads a request. */
export interface ParseOptions {
  /**
   * Refuse a field the request message does not define (a JSON body: Go's envoyproxy/ratelimit
   * reads `/json` with protojson, which refuses them too), allowing `alsoAllowed` at the top
   * level; a misspelt `hits_adend` would otherwise be ignored in silence. A decoded gRPC message
   * has no unknown fields, so it is read leniently (the default).
   */
  readonly strict?: { readonly alsoAllowed?: readonly string[] };
}

const FIELDS = Object.freeze({
  request: ['domain', 'descriptors', 'hits_addend', 'hitsAddend'],
  descriptor: ['entries', 'limit', 'hits_addend', 'hitsAddend'],
  entry: ['key', 'value'],
  limit: ['requests_per_unit', 'requestsPerUnit', 'unit'],
});

function refuseUnknown(raw: Raw, known: readonly string[], path: string, strict: boolean): void {
  if (!strict) return;
  for (const name of Object.keys(raw))
    if (!known.includes(name)) {
      const at = path === '' ? name : `${path}.${name}`;
      throw invalid(at, `is not a field of the request; expected ${known.join(', ')}`);
    }
}

/**
 * parseDecisionRequest returns the checked form of `raw` (a decoded `RateLimitRequest` or its
 * JSON), or throws {@link DecisionError} `INVALID_REQUEST` naming the first bad field: a missing
 * domain, no descriptors, an entry with no key, a unit that does not exist, a `hits_addend` that
 * is not a whole number within uint32's range, more than {@link REQUEST_LIMITS} allows, or (with
 * `options.strict`) a field the message does not define.
 */
export function parseDecisionRequest(raw: unknown, options: ParseOptions = {}): DecisionRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid('request', 'must be an object with domain and descriptors');
  const r = raw as Raw;
  const strict = options.strict !== undefined;
  refuseUnknown(r, [...FIELDS.request, ...(options.strict?.alsoAllowed ?? [])], '', strict);
  const domain = text(r.domain, 'domain', false);
  const list = r.descriptors;
  if (!Array.isArray(list) || list.length === 0)
    throw invalid('descriptors', 'must be a non-empty list of descriptors');
  if (list.length > REQUEST_LIMITS.maxDescriptors)
    throw invalid(
      'descriptors',
      `has ${list.length} descriptors; at most ${REQUEST_LIMITS.maxDescriptors} are accepted`,
    );
  const hits = hitsOf(field(r, 'hits_addend', 'hitsAddend'), 'hits_addend');
  return {
    domain,
    descriptors: list.map((d, i) => descriptorOf(d, `descriptors[${i}]`, strict)),
    hitsAddend: hits === undefined || hits === 0 ? 1 : hits,
  };
}

function text(value: unknown, path: string, emptyOk: boolean): string {
  if (typeof value !== 'string' || (!emptyOk && value === ''))
    throw invalid(path, emptyOk ? 'must be a string' : 'must be a non-empty string');
  if (value.length > REQUEST_LIMITS.maxTextLength)
    throw invalid(path, `is ${value.length} characters long; at most ${REQUEST_LIMITS.maxTextLength} are accepted`);
  return value;
}

function descriptorOf(raw: unknown, path: string, strict: boolean): RequestDescriptor {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid(path, 'must be an object with entries');
  const d = raw as Raw;
  refuseUnknown(d, FIELDS.descriptor, path, strict);
  const list = d.entries;
  if (!Array.isArray(list) || list.length === 0)
    throw invalid(`${path}.entries`, 'must be a non-empty list of { key, value }');
  if (list.length > REQUEST_LIMITS.maxEntries)
    throw invalid(`${path}.entries`, `has ${list.length} entries; at most ${REQUEST_LIMITS.maxEntries} are accepted`);
  const entries = list.map((e: unknown, i): DescriptorEntry => {
    const at = `${path}.entries[${i}]`;
    if (typeof e !== 'object' || e === null) throw invalid(at, 'must be an object with key and value');
    const entry = e as Raw;
    refuseUnknown(entry, FIELDS.entry, at, strict);
    return { key: text(entry.key, `${at}.key`, false), value: text(entry.value ?? '', `${at}.value`, true) };
  });
  const limit = d.limit === undefined || d.limit === null ? undefined : limitOf(d.limit, `${path}.limit`, strict);
  const hitsAddend = hitsOf(unwrap(field(d, 'hits_addend', 'hitsAddend')), `${path}.hits_addend`);
  return { entries, limit, hitsAddend };
}

/** unwrap reads a google.protobuf.UInt64Value, as decoded (`{ value }`) or as JSON (the bare value). */
function unwrap(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && 'value' in value) return (value as Raw).value;
  return value;
}

function hitsOf(value: unknown, path: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' && /^\d{1,20}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw invalid(path, 'must be a whole number of at least 0');
  if (n > REQUEST_LIMITS.maxHitsAddend)
    throw invalid(path, `is ${String(value)}; at most ${REQUEST_LIMITS.maxHitsAddend} is accepted`);
  return n;
}

function limitOf(raw: unknown, path: string, strict: boolean): RequestDescriptor['limit'] {
  if (typeof raw !== 'object' || raw === null) throw invalid(path, 'must be an object with requests_per_unit and unit');
  const l = raw as Raw;
  refuseUnknown(l, FIELDS.limit, path, strict);
  const rpu = field(l, 'requests_per_unit', 'requestsPerUnit') ?? 0;
  if (typeof rpu !== 'number' || !Number.isInteger(rpu) || rpu < 0 || rpu > REQUEST_LIMITS.maxHitsAddend) {
    throw invalid(`${path}.requests_per_unit`, 'must be a whole number from 0 to 4294967295');
  }
  const rawUnit = l.unit;
  // The override's enum (envoy.type.v3.RateLimitUnit) numbers SECOND 1 to DAY 4.
  const unit = typeof rawUnit === 'number' && rawUnit > 4 ? undefined : unitOf(rawUnit);
  if (unit === undefined)
    throw invalid(
      `${path}.unit`,
      `is ${JSON.stringify(rawUnit ?? null)}; expected SECOND, MINUTE, HOUR or DAY (or week, month, year by name)`,
    );
  return { requestsPerUnit: rpu, unit };
}
