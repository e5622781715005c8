/**
 * Config warnings: settings that are valid but risky or idle, each located with its fix, printed by
 * `floodgate check` after the valid line and logged by `floodgate serve` at start. A warning never
 * refuses the config; what is unsafe without being stated is a problem in `checks.ts` instead.
 */
import type { ConfigPath, ConfigProblem, Locator } from './problems.js';
import type { GatewayConfig } from './schema.js';

type Raw = Record<string, unknown> | undefined;

function child(raw: unknown, key: string | number): Raw {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const value = (raw as Record<string | number, unknown>)[key];
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

/** The wait-line settings that act only on requests that wait (maxQueue above 0). */
const WAIT_SETTINGS = ['maxWaitMs', 'order', 'codel'] as const;

type Section = GatewayConfig['routes'][number] | GatewayConfig['upstreams'][number];

/**
 * configWarnings returns the warnings of a valid `config` whose parsed YAML (before defaults) is
 * `raw`: a JWT claim read unverified, a priority header believed from any client, and wait-line
 * settings that do nothing because no request may wait.
 */
export function configWarnings(config: GatewayConfig, raw: unknown, at: Locator): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  config.routes.forEach((route, i) => {
    const path = ['routes', i];
    route.rules.forEach((rule, j) => {
      if (rule.key.type === 'jwt' && rule.key.verify === false)
        warnings.push(
          at.problem(
            [...path, 'rules', j, 'key', 'verify'],
            `the rule "${rule.name}" of route "${route.name}" reads the JWT claim ${rule.key.claim} without verifying the token: a client reaching the gateway directly can mint one for any subject and spend that client's budget`,
            'keep the gateway reachable only through the proxy that verifies every token (and strips the header otherwise), or set secretEnv and remove verify: false',
          ),
        );
    });
    warnings.push(...sectionWarnings(route, child(child(raw, 'routes'), i), path, config, at));
  });
  warnings.push(...catchAllWarnings(config, at));
  const keys = config.keys;
  const secretKeyed = config.routes.some((r) =>
    r.rules.some((rule) => rule.key.type === 'header' || rule.key.type === 'jwt' || rule.key.type === 'query'),
  );
  if (
    keys.hash &&
    keys.secret === undefined &&
    keys.secretEnv === undefined &&
    (secretKeyed || config.rateLimitService !== undefined)
  )
    warnings.push(
      at.problem(
        ['keys'],
        'identity values (API keys, JWT claims, query tokens, descriptor values) are hashed in store keys without a secret: a guessable value (a user id) can be recovered from its key by hashing candidates',
        'set keys.secretEnv to a variable holding 16 characters or more, the same on every gateway sharing the store',
      ),
    );
  config.upstreams.forEach((upstream, i) =>
    warnings.push(...sectionWarnings(upstream, child(child(raw, 'upstreams'), i), ['upstreams', i], config, at)),
  );
  return warnings;
}

function sectionWarnings(
  section: Section,
  raw: Raw,
  path: ConfigPath,
  config: GatewayConfig,
  at: Locator,
): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  for (const kind of ['concurrency', 'adaptive'] as const) {
    const limit = section[kind];
    const given = child(raw, kind);
    if (limit === undefined || given === undefined || limit.maxQueue > 0) continue;
    for (const setting of WAIT_SETTINGS)
      if (given[setting] !== undefined)
        warnings.push(
          at.problem(
            [...path, kind, setting],
            `${kind}.${setting} is set but maxQueue is 0: no request ever waits for a slot, so it does nothing`,
            `set ${kind}.maxQueue to how many requests may wait, or remove ${setting}`,
          ),
        );
  }
  const priority = section.priority;
  if (priority !== undefined && priority.headerFrom === undefined) {
    const fromProxies = config.trustProxy !== false;
    warnings.push(
      at.problem(
        [...path, 'priority'],
        `any client can claim the tier "${priority.tiers[0]!}" by sending ${priority.header}: ${priority.tiers[0]!}, and take the room held back for it`,
        fromProxies
          ? 'set priority.headerFrom: trusted-proxies (believed only from trustProxy peers), or headerFrom: anyone when an edge in front sets or strips the header on every request'
          : 'set priority.headerFrom: anyone once an edge in front sets or strips the header on every request, or trustProxy with headerFrom: trusted-proxies',
      ),
    );
  }
  if (priority?.headerFrom === 'trusted-proxies' && config.trustProxy === false)
    warnings.push(
      at.problem(
        [...path, 'priority', 'headerFrom'],
        `priority.headerFrom is trusted-proxies but trustProxy is false: no peer is trusted, so every request gets the default tier`,
        'list your edge proxies under trustProxy, or set headerFrom: anyone',
      ),
    );
  return warnings;
}

/**
 * catchAllWarnings warns of a route matching any host that forwards to the origin of a route
 * scoped to one host: a request naming another Host reaches the same application through it,
 * counted by its rules instead of the host route's (most applications ignore Host).
 */
function catchAllWarnings(config: GatewayConfig, at: Locator): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  config.routes.forEach((route, i) => {
    if (route.match.host !== undefined) return;
    const origin = new URL(route.upstream).origin;
    const scoped = config.routes.find((r) => r.match.host !== undefined && new URL(r.upstream).origin === origin);
    if (scoped === undefined) return;
    warnings.push(
      at.problem(
        ['routes', i, 'match'],
        `the route "${route.name}" matches any Host and forwards to ${origin}, as the route "${scoped.name}" does for host ${scoped.match.host!}: a request naming another Host reaches the same application through "${route.name}", counted by its rules instead`,
        `give "${route.name}" a match.host too, or have the application (or a last route answering 404) refuse hosts it does not serve`,
      ),
    );
  });
  return warnings;
}
