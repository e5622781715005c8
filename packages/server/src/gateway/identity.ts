/**
 * Identities from config: who a request counts against under one rule, and what the rule does
 * when the request has no such identity (absent) or presents a bad one (invalid): refuse it,
 * count it against the client's address instead, or skip the rule, as the rule's key says.
 */
import { FIELD, PROBLEM_CONTENT_TYPE, byHeader, byIp, type HeaderPair } from 'floodgate/http';
import type { KeyConfig } from '../config/schema.js';
import { readJwtClaim, type JwtProblem } from './jwt.js';
import type { ProxyRequest } from './request.js';

/**
 * IdentityFault is why a request has no identity under a key: `absent` (the header, token or
 * parameter is missing, empty or blank) or `invalid` (a JWT the gateway does not accept, or a
 * query parameter or key header given twice with different values), with the reason.
 */
export interface IdentityFault {
  readonly fault: 'absent' | 'invalid';
  readonly reason: 'absent' | JwtProblem | 'repeated';
}

/** RequestIdentity returns the identity of a request under a key (`header:x-api-key:…`), or why it has none. */
export type RequestIdentity = (req: ProxyRequest) => string | IdentityFault;

/** IdentityRefusal is the answer to a request refused for its identity: 401 (absent or invalid credentials) or 400. */
export interface IdentityRefusal {
  readonly allowed: false;
  readonly status: 400 | 401;
  readonly headers: readonly HeaderPair[];
  readonly body: string;
}

/**
 * RuleIdentity returns the identity a rule counts a request against (the key's, or the client's
 * address as a fallback), undefined when the rule is to skip the request, or the refusal to answer.
 */
export type RuleIdentity = (req: ProxyRequest) => string | IdentityRefusal | undefined;

const ABSENT: IdentityFault = Object.freeze({ fault: 'absent', reason: 'absent' });
const REPEATED: IdentityFault = Object.freeze({ fault: 'invalid', reason: 'repeated' });
const JWT_FAULTS = new Map<JwtProblem, IdentityFault>();

function jwtFault(problem: JwtProblem): IdentityFault {
  let fault = JWT_FAULTS.get(problem);
  if (fault === undefined) JWT_FAULTS.set(problem, (fault = Object.freeze({ fault: 'invalid', reason: problem })));
  return fault;
}

/**
 * identityOf returns the identity a config key describes: `ip:…`, `header:name:…`, `jwt:claim:…`,
 * `query:name:…`, `param:name:…` or `route:name`. A JWT secret is read from `env` when named by
 * `secretEnv`. The client address, a route parameter (its pattern needs it non-empty) and the
 * route are never absent.
 */
export function identityOf(key: KeyConfig, env: NodeJS.ProcessEnv, now: () => number = Date.now): RequestIdentity {
  switch (key.type) {
    case 'ip': {
      const ip = byIp(key.ipv6PrefixBits === undefined ? {} : { ipv6PrefixBits: key.ipv6PrefixBits });
      return (req) => ip(req) ?? ABSENT;
    }
    case 'header': {
      const header = byHeader(key.name);
      const name = key.name.toLowerCase();
      return (req) => {
        const found = header(req);
        if (found === undefined) return ABSENT;
        // Joined lines always hold a comma: only then are the lines looked at. Two different keys
        // are refused as a repeated query parameter is (RFC 9110 section 5.3: a field that is not
        // a list is sent once), where counting their join would make each join a fresh key.
        return found.includes(',') && req.repeatsHeader(name) ? REPEATED : found;
      };
    }
    case 'jwt':
      return jwtIdentity(
        key.claim,
        (key.header ?? 'authorization').toLowerCase(),
        key.secretEnv === undefined ? key.secret : env[key.secretEnv],
        now,
      );
    case 'query':
      return queryIdentity(key.name);
    case 'param': {
      const name = key.name;
      const kind = `param:${name}:`;
      return (req) => {
        const value = req.params[name];
        return value === undefined || value === '' ? ABSENT : kind + value;
      };
    }
    case 'route':
      return (req) => `route:${req.routeName}`;
  }
}

/** RuleIdentityOptions says whose identity {@link ruleIdentity} makes. */
export interface RuleIdentityOptions {
  /** The rule's name, for refusal bodies. */
  readonly rule: string;
  readonly env: NodeJS.ProcessEnv;
  /** The clock that JWT expiry is checked against (default `Date.now`). */
  readonly now?: () => number;
}

/**
 * ruleIdentity returns a rule's identity under `key`, applying its `onAbsent` and `onInvalid`:
 * `refuse` answers 401 (400 for a repeated query parameter), `fallback` counts the request
 * against the client's address under the same rule, `skip` lets the rule not apply. Refusals are
 * built once per rule and reason.
 */
export function ruleIdentity(key: KeyConfig, options: RuleIdentityOptions): RuleIdentity {
  const read = identityOf(key, options.env, options.now);
  const onAbsent = 'onAbsent' in key ? key.onAbsent : 'refuse';
  const onInvalid = 'onInvalid' in key ? key.onInvalid : 'refuse';
  const fallback = byIp();
  const refusals = new Map<IdentityFault, IdentityRefusal>();
  return (req) => {
    const found = read(req);
    if (typeof found === 'string') return found;
    const action = found.fault === 'absent' ? onAbsent : onInvalid;
    if (action === 'fallback') return fallback(req);
    if (action === 'skip') return undefined;
    let refusal = refusals.get(found);
    if (refusal === undefined) refusals.set(found, (refusal = refusalOf(key, options.rule, found)));
    return refusal;
  };
}

function jwtIdentity(claim: string, header: string, secret: string | undefined, now: () => number): RequestIdentity {
  const kind = `jwt:${claim}:`;
  return (req) => {
    const token = bearerToken(req.header(header));
    if (token === undefined) return ABSENT;
    const found = readJwtClaim(token, { claim, secret, nowMs: now() });
    return typeof found === 'string' ? kind + found : jwtFault(found.problem);
  };
}

/**
 * The token of an Authorization-style value: after `Bearer `, or the whole value when it has no
 * scheme; undefined for a missing or blank value, a bare `Bearer`, or another scheme (`Basic ...`).
 */
function bearerToken(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  if (trimmed === undefined || trimmed === '' || trimmed.toLowerCase() === 'bearer') return undefined;
  const space = trimmed.search(/\s/);
  if (space < 0) return trimmed;
  if (trimmed.slice(0, space).toLowerCase() !== 'bearer') return undefined;
  const token = trimmed.slice(space).trim();
  return token === '' ? undefined : token;
}

function queryIdentity(name: string): RequestIdentity {
  const kind = `query:${name}:`;
  return (req) => {
    if (req.query === '') return ABSENT;
    const values = new URLSearchParams(req.query).getAll(name);
    const value = values[0];
    // Counted as one value while the upstream may read another: refuse to guess which.
    for (let i = 1; i < values.length; i++) if (values[i] !== value) return REPEATED;
    return value === undefined || value.trim() === '' ? ABSENT : kind + value;
  };
}

const JWT_WORDS: Record<JwtProblem, string> = {
  malformed: 'is not a well-formed JWT',
  algorithm: 'has an algorithm this gateway does not accept (alg: none, or not HS256)',
  signature: 'has a signature that does not verify',
  expired: 'has expired',
  premature: 'is not valid yet (nbf)',
  claim: 'lacks the claim',
};

/** The 401 (or 400) answer to a request refused under `key` for `fault`. */
function refusalOf(key: KeyConfig, rule: string, fault: IdentityFault): IdentityRefusal {
  const what = describeKey(key);
  const status = fault.reason === 'repeated' ? 400 : 401;
  const detail =
    fault.reason === 'absent'
      ? `the rule "${rule}" counts requests by ${what}, which this request lacks`
      : fault.reason === 'repeated'
        ? `the rule "${rule}" counts requests by ${what}, which this request gives more than once with different values`
        : `the rule "${rule}" counts requests by ${what}: this request's token ${JWT_WORDS[fault.reason]}`;
  const headers: HeaderPair[] = [
    [FIELD.cacheControl, 'no-store'],
    [FIELD.contentType, PROBLEM_CONTENT_TYPE],
  ];
  if (status === 401) headers.push(['www-authenticate', challengeOf(key, fault)]);
  const title = status === 401 ? 'Unauthorized' : 'Bad Request';
  return {
    allowed: false,
    status,
    headers,
    body: JSON.stringify({ type: 'about:blank', title, status, detail, rule }),
  };
}

/** What a key reads, in words. */
function describeKey(key: KeyConfig): string {
  if (key.type === 'header') return `its ${key.name} header`;
  if (key.type === 'jwt') return `the ${key.claim} claim of its bearer token`;
  if (key.type === 'query') return `its ${key.name} query parameter`;
  return `its ${key.type}`;
}

/**
 * The WWW-Authenticate challenge of a 401 (RFC 9110 section 11.6.1 requires one): RFC 6750's
 * Bearer for a JWT, with `invalid_token` for a token refused; for an API key in a header or query
 * parameter, where no scheme is registered, `ApiKey` naming where the key goes.
 */
function challengeOf(key: KeyConfig, fault: IdentityFault): string {
  if (key.type === 'jwt') {
    if (fault.reason === 'absent' || fault.reason === 'repeated') return 'Bearer realm="floodgate"';
    return `Bearer realm="floodgate", error="invalid_token", error_description="the token ${JWT_WORDS[fault.reason]}"`;
  }
  if (key.type === 'header') return `ApiKey realm="floodgate", header="${quoted(key.name.toLowerCase())}"`;
  if (key.type === 'query') return `ApiKey realm="floodgate", query="${quoted(key.name)}"`;
  return 'ApiKey realm="floodgate"';
}

function quoted(text: string): string {
  return text.replace(/["\\]/g, '\\$&');
}
