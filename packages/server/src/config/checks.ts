/**
 * The checks no schema expresses: names that must be unique, costs no policy can admit, rules and
 * routes that can never apply, secrets named but not set, options that contradict each other
 * (the overload sections' own checks are in `overload-checks.ts`).
 */
import { FloodgateError, StoreTimeout } from 'floodgate';
import { checkLeases } from './lease-checks.js';
import { checkMatch } from './match-checks.js';
import { checkOverload } from './overload-checks.js';
import { policyOf } from './policy.js';
import { checkSmoothRule } from './smooth-checks.js';
import { isSmoothPolicy } from './smooth-schema.js';
import type { ConfigPath, ConfigProblem, Locator } from './problems.js';
import type { GatewayConfig, RouteConfig, RuleConfig } from './schema.js';
import { paramNamesOf, patternCovers } from './paths.js';
import { workerProblems } from './worker-checks.js';

/** checkConfig returns every problem of a schema-valid config (none: an empty list). */
export function checkConfig(config: GatewayConfig, at: Locator, env: NodeJS.ProcessEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const routeNames = new Set<string>();
  config.routes.forEach((route, i) => {
    if (routeNames.has(route.name))
      problems.push(
        at.problem(
          ['routes', i, 'name'],
          `the route name "${route.name}" is used twice`,
          'give each route its own name',
        ),
      );
    routeNames.add(route.name);
    const shadowing = config.routes.slice(0, i).findIndex((earlier) => routeCovers(earlier, route));
    if (shadowing >= 0) {
      const by = config.routes[shadowing]!.name;
      problems.push(
        at.problem(
          ['routes', i, 'match'],
          `the route "${route.name}" is unreachable: route "${by}" (routes[${shadowing}]) comes first and matches every request it would`,
          'move the more specific route above the general one, or narrow the earlier match',
        ),
      );
    }
    problems.push(...checkMatch(route, ['routes', i], at));
    problems.push(...checkRules(route, ['routes', i], at, env));
  });
  problems.push(...checkOverload(config, at));
  problems.push(...checkStore(config, at, env));
  problems.push(...checkSecret(config.keys.secret, config.keys.secretEnv, ['keys'], 'secret', at, env));
  problems.push(...checkLeases(config, at));
  problems.push(...workerProblems(config, config.workers, at));
  if (config.routes.length === 0 && config.rateLimitService === undefined) {
    problems.push(
      at.problem(
        ['routes'],
        'the config serves nothing: it needs routes, a rateLimitService, or both',
        'add a route under routes:, or a rateLimitService: section with Envoy descriptor files',
      ),
    );
  }
  const service = config.rateLimitService;
  if (service !== undefined && service.grpc === undefined && service.http === undefined) {
    problems.push(
      at.problem(
        ['rateLimitService'],
        'the rateLimitService has no listener: it needs grpc, http or both',
        'add grpc: { port: 8081 } (for Envoy) and/or http: { port: 8082 } (the JSON API)',
      ),
    );
  }
  if (config.limits.requestTimeoutMs < config.limits.headersTimeoutMs) {
    problems.push(
      at.problem(
        ['limits', 'requestTimeoutMs'],
        `requestTimeoutMs (${config.limits.requestTimeoutMs}) is shorter than headersTimeoutMs (${config.limits.headersTimeoutMs}): the whole request cannot take less time than its headers`,
        'make requestTimeoutMs at least headersTimeoutMs',
      ),
    );
  }
  if (config.admin !== undefined)
    problems.push(...checkSecret(config.admin.token, config.admin.tokenEnv, ['admin'], 'token', at, env));
  return problems;
}

function checkRules(route: RouteConfig, path: ConfigPath, at: Locator, env: NodeJS.ProcessEnv): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const names = new Set<string>();
  const params = paramNamesOf(route.match.path);
  route.rules.forEach((rule, j) => {
    const rp = [...path, 'rules', j];
    if (names.has(rule.name))
      problems.push(
        at.problem(
          [...rp, 'name'],
          `the rule name "${rule.name}" is used twice in route "${route.name}"`,
          'give each rule of a route its own name',
        ),
      );
    names.add(rule.name);
    problems.push(...checkPolicy(rule, rp, at));
    if (rule.mode !== 'queue' && rule.queue !== undefined)
      problems.push(
        at.problem(
          [...rp, 'queue'],
          `queue options are given but the rule's mode is "${rule.mode}"`,
          'set mode: queue, or remove the queue options',
        ),
      );
    if (rule.mode === 'shadow' && rule.refundOn !== undefined)
      problems.push(
        at.problem(
          [...rp, 'refundOn'],
          'refundOn is given but the rule is a shadow rule, which refuses nothing and charges no request',
          'remove refundOn, or set mode: enforce or queue',
        ),
      );
    if (rule.refundOn !== undefined && isSmoothPolicy(rule.policy))
      problems.push(
        at.problem(
          [...rp, 'refundOn'],
          `refundOn is given but the rule's policy ${rule.policy.algorithm} paces requests, and a turn waited for cannot be given back`,
          'remove refundOn, or put it on a counting rule of the route',
        ),
      );
    const key = rule.key;
    if (key.type === 'param' && !params.includes(key.name)) {
      const known =
        params.length === 0 ? 'it has no parameters' : `its parameters are ${params.map((p) => `:${p}`).join(', ')}`;
      problems.push(
        at.problem(
          [...rp, 'key', 'name'],
          `the rule can never apply: the route's path ${route.match.path} has no parameter :${key.name} (${known})`,
          "name a parameter of the route's path, or add it to match.path",
        ),
      );
    }
    if (key.type === 'jwt') problems.push(...checkJwt(key, [...rp, 'key'], at, env));
  });
  return problems;
}

/**
 * checkJwt refuses a JWT key that would read its claim unverified without saying so: with no
 * secret anyone can mint `sub=<victim>` and spend that client's budget. Like Envoy's jwt_authn and
 * nginx's auth_jwt, which verify always, a key verifies unless the config says `verify: false`.
 */
function checkJwt(
  key: Extract<RuleConfig['key'], { type: 'jwt' }>,
  path: ConfigPath,
  at: Locator,
  env: NodeJS.ProcessEnv,
): ConfigProblem[] {
  const unverified = key.secret === undefined && key.secretEnv === undefined;
  if (key.verify === false && !unverified)
    return [
      at.problem(
        [...path, 'verify'],
        'verify: false is given with a secret: the token would be verified and not at once',
        'remove verify: false to verify tokens with the secret, or remove the secret',
      ),
    ];
  if (unverified && key.verify !== false)
    return [
      at.problem(
        path,
        "a jwt key without secret or secretEnv would read the token's claim unverified: anyone could mint a token for another subject and spend that client's budget",
        'set secretEnv to the variable holding the HS256 secret, or verify: false when a proxy in front verifies every token and strips the header otherwise',
      ),
    ];
  return checkSecret(key.secret, key.secretEnv, path, 'secret', at, env);
}

function checkPolicy(rule: RuleConfig, rp: ConfigPath, at: Locator): ConfigProblem[] {
  if (isSmoothPolicy(rule.policy)) return checkSmoothRule(rule, rule.policy, rp, at);
  try {
    const policy = policyOf(rule.policy);
    if (rule.cost > policy.limit) {
      return [
        at.problem(
          [...rp, 'cost'],
          `a cost of ${rule.cost} can never be admitted: the policy admits at most ${policy.limit} at once, so every request would be refused`,
          `use a cost of at most ${policy.limit}, or raise the policy's limit`,
        ),
      ];
    }
  } catch (err) {
    if (!(err instanceof FloodgateError)) throw err;
    const option = err.option?.split('.').at(-1);
    return [
      at.problem(
        option === undefined ? [...rp, 'policy'] : [...rp, 'policy', option],
        err.message,
        'change the number to one the policy accepts',
      ),
    ];
  }
  return [];
}

function checkStore(config: GatewayConfig, at: Locator, env: NodeJS.ProcessEnv): ConfigProblem[] {
  const s = config.store;
  if (s.type !== 'redis') return [];
  const problems: ConfigProblem[] = [];
  if ((s.url === undefined) === (s.nodes === undefined)) {
    problems.push(
      at.problem(
        ['store'],
        'a redis store needs exactly one of url (one server) and nodes (a cluster)',
        'give url: redis://host:port, or nodes: [redis://host:port, ...]',
      ),
    );
  }
  if (typeof s.onError === 'object' && s.onError.nodes !== undefined && s.onError.share !== undefined) {
    problems.push(
      at.problem(
        ['store', 'onError', 'share'],
        'both nodes and share are given (share is 1 / nodes)',
        'keep one: nodes (how many gateways share the limits) or share (the part each admits)',
      ),
    );
  }
  if (typeof s.timeoutMs === 'object') {
    try {
      StoreTimeout.of(s.timeoutMs, 'store.timeoutMs');
    } catch (err) {
      if (!(err instanceof FloodgateError)) throw err;
      const option = err.option?.split('.').at(-1);
      problems.push(
        at.problem(
          option === undefined || option === 'timeoutMs' ? ['store', 'timeoutMs'] : ['store', 'timeoutMs', option],
          err.message,
          'keep floorMs at most capMs (the timeout lies between them)',
        ),
      );
    }
  }
  if (s.passwordEnv !== undefined && env[s.passwordEnv] === undefined) {
    problems.push(
      at.problem(
        ['store', 'passwordEnv'],
        `the environment variable ${s.passwordEnv} is not set`,
        `set ${s.passwordEnv}, or remove passwordEnv`,
      ),
    );
  }
  return problems;
}

function checkSecret(
  value: string | undefined,
  envName: string | undefined,
  path: ConfigPath,
  what: string,
  at: Locator,
  env: NodeJS.ProcessEnv,
): ConfigProblem[] {
  if (value !== undefined && envName !== undefined)
    return [
      at.problem(
        [...path, `${what}Env`],
        `both ${what} and ${what}Env are given`,
        `keep one: ${what}Env is better, since the file then holds no secret`,
      ),
    ];
  if (envName !== undefined && (env[envName] ?? '').length < 16) {
    return [
      at.problem(
        [...path, `${what}Env`],
        `the environment variable ${envName} is not set or is shorter than 16 characters`,
        `set ${envName} to a long random value before starting`,
      ),
    ];
  }
  return [];
}

/** routeCovers tells whether `earlier` matches every request `later` matches. */
function routeCovers(earlier: RouteConfig, later: RouteConfig): boolean {
  const e = earlier.match;
  const l = later.match;
  if (e.host !== undefined && e.host.toLowerCase() !== l.host?.toLowerCase()) return false;
  if (e.methods !== undefined && (l.methods === undefined || !l.methods.every((m) => e.methods!.includes(m))))
    return false;
  return patternCovers(e.path, l.path, e, l);
}
