/** Identities from config: who a request counts against under one rule. */
import { byHeader, byIp } from 'floodgate/http';
import type { KeyConfig } from '../config/schema.js';
import { jwtClaim } from './jwt.js';
import type { ProxyRequest } from './request.js';

/** RequestIdentity returns the identity of a request under a rule, or undefined when it has none (the rule then does not apply). */
export type RequestIdentity = (req: ProxyRequest) => string | undefined;

/**
 * identityOf returns the identity a config key describes: `ip:…`, `header:name:…`, `jwt:claim:…`,
 * `query:name:…`, `param:name:…` or `route:name`. A JWT secret is read from `env` when named by `secretEnv`.
 */
export function identityOf(key: KeyConfig, env: NodeJS.ProcessEnv, now: () => number = Date.now): RequestIdentity {
  switch (key.type) {
    case 'ip':
      return byIp(key.ipv6PrefixBits === undefined ? {} : { ipv6PrefixBits: key.ipv6PrefixBits });
    case 'header':
      return byHeader(key.name);
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
        return value === undefined || value === '' ? undefined : kind + value;
      };
    }
    case 'route':
      return (req) => `route:${req.routeName}`;
  }
}

function jwtIdentity(claim: string, header: string, secret: string | undefined, now: () => number): RequestIdentity {
  const kind = `jwt:${claim}:`;
  return (req) => {
    const value = req.header(header);
    if (value === undefined) return undefined;
    const token = /^bearer\s+/i.test(value) ? value.replace(/^bearer\s+/i, '') : value;
    const found = jwtClaim(token.trim(), { claim, secret, nowMs: now() });
    return found === undefined ? undefined : kind + found;
  };
}

function queryIdentity(name: string): RequestIdentity {
  const kind = `query:${name}:`;
  return (req) => {
    if (req.query === '') return undefined;
    const value = new URLSearchParams(req.query).get(name);
    return value === null || value === '' ? undefined : kind + value;
  };
}
