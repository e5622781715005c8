/**
 * The checks of the overload sections that no schema expresses: one limit kind per scope, bounds in
 * order, tier names that exist, sections that would do nothing, and `upstreams` entries that no
 * route reaches. Each problem names its place and a fix.
 */
import { CircuitBreaker, ConcurrencyLimiter, FloodgateError } from 'floodgate';
import { ADAPTIVE_DEFAULTS, breakerOptionsOf, limiterOptionsOf } from './overload.js';
import type { ProtectionConfig } from './overload-schema.js';
import type { ConfigPath, ConfigProblem, Locator } from './problems.js';
import type { GatewayConfig } from './schema.js';

/** checkOverload returns every problem of the routes' and upstreams' overload sections. */
export function checkOverload(config: GatewayConfig, at: Locator): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  config.routes.forEach((route, i) => problems.push(...checkSection(route, ['routes', i], at)));
  const origins = new Map<string, number>();
  config.upstreams.forEach((upstream, i) => {
    const path = ['upstreams', i];
    problems.push(...checkSection(upstream, path, at));
    const url = new URL(upstream.url);
    const earlier = origins.get(url.origin);
    if (earlier !== undefined)
      problems.push(
        at.problem(
          [...path, 'url'],
          `the origin ${url.origin} is listed twice in upstreams (upstreams[${earlier}] too)`,
          'merge the two entries into one',
        ),
      );
    origins.set(url.origin, i);
    if (url.pathname !== '/' || url.search !== '')
      problems.push(
        at.problem(
          [...path, 'url'],
          `an upstreams url names an origin, but ${upstream.url} has a path or query`,
          `write the origin only: ${url.origin}`,
        ),
      );
    else if (!config.routes.some((r) => new URL(r.upstream).origin === url.origin)) {
      problems.push(
        at.problem(
          [...path, 'url'],
          `no route forwards to ${url.origin}: this protection would never apply`,
          "point a route's upstream at this origin, or remove the entry",
        ),
      );
    }
    if (
      upstream.concurrency === undefined &&
      upstream.adaptive === undefined &&
      upstream.circuitBreaker === undefined
    ) {
      problems.push(
        at.problem(
          path,
          `the upstreams entry for ${url.origin} protects nothing: it has no concurrency, adaptive or circuitBreaker section`,
          'add concurrency: { limit: 100 }, adaptive: {}, or a circuitBreaker, or remove the entry',
        ),
      );
    }
  });
  config.routes.forEach((route, i) => problems.push(...checkRouteTier(config, i, at)));
  return problems;
}

function checkSection(section: ProtectionConfig, path: ConfigPath, at: Locator): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const limited = section.concurrency !== undefined || section.adaptive !== undefined;
  if (section.concurrency !== undefined && section.adaptive !== undefined) {
    problems.push(
      at.problem(
        [...path, 'adaptive'],
        'both concurrency (a fixed limit) and adaptive (a learned limit) are given: one scope has one concurrency limit',
        'keep concurrency: { limit } for a fixed bulkhead, or adaptive: { ... } to learn the limit from latency, not both',
      ),
    );
  }
  problems.push(...checkAdaptive(section, path, at));
  const priority = section.priority;
  if (priority !== undefined) {
    problems.push(...checkTiers(priority.tiers, [...path, 'priority', 'tiers'], at));
    if (priority.default !== undefined && !priority.tiers.includes(priority.default)) {
      problems.push(
        at.problem(
          [...path, 'priority', 'default'],
          `the default tier "${priority.default}" is not one of the tiers (${priority.tiers.join(', ')})`,
          `name one of the tiers, such as "${priority.tiers.at(-1)!}", or list "${priority.default}" under tiers`,
        ),
      );
    }
    if (!limited)
      problems.push(
        at.problem(
          [...path, 'priority'],
          'priority tiers are given but there is no concurrency limit here to share out',
          'add concurrency: { limit } or adaptive: {} beside priority, or remove priority',
        ),
      );
  }
  if (section.shed !== undefined && !limited) {
    problems.push(
      at.problem(
        [...path, 'shed'],
        'shed says how a request over the concurrency limit is answered, but there is no concurrency limit here',
        'add concurrency: { limit } or adaptive: {} beside shed, or remove shed',
      ),
    );
  }
  if (problems.length === 0) problems.push(...libraryRefusals(section, path, at));
  return problems;
}

function checkAdaptive(section: ProtectionConfig, path: ConfigPath, at: Locator): ConfigProblem[] {
  const a = section.adaptive;
  if (a === undefined) return [];
  const min = a.minLimit ?? ADAPTIVE_DEFAULTS.minLimit;
  const max = a.maxLimit ?? ADAPTIVE_DEFAULTS.maxLimit;
  const p = [...path, 'adaptive'];
  if (min > max) {
    const which = a.minLimit === undefined ? 'maxLimit' : 'minLimit';
    return [
      at.problem(
        [...p, which],
        `minLimit (${min}${a.minLimit === undefined ? ', the default' : ''}) is above maxLimit (${max}${a.maxLimit === undefined ? ', the default' : ''})`,
        'make minLimit at most maxLimit',
      ),
    ];
  }
  const initial = a.initialLimit;
  if (initial !== undefined && (initial < min || initial > max)) {
    return [
      at.problem(
        [...p, 'initialLimit'],
        `initialLimit (${initial}) lies outside minLimit (${min}) to maxLimit (${max})`,
        `use an initialLimit from ${min} to ${max}`,
      ),
    ];
  }
  return [];
}

function checkTiers(tiers: readonly string[], path: ConfigPath, at: Locator): ConfigProblem[] {
  const seen = new Set<string>();
  const problems: ConfigProblem[] = [];
  tiers.forEach((tier, k) => {
    if (seen.has(tier))
      problems.push(
        at.problem([...path, k], `the tier "${tier}" is listed twice`, 'list each tier once, most important first'),
      );
    seen.add(tier);
  });
  return problems;
}

/** A route's `routeTier` must be a tier of every priority that applies to the route: its own and its upstream's. */
function checkRouteTier(config: GatewayConfig, i: number, at: Locator): ConfigProblem[] {
  const route = config.routes[i]!;
  if (route.routeTier === undefined) return [];
  const origin = new URL(route.upstream).origin;
  const upstream = config.upstreams.find((u) => URL.canParse(u.url) && new URL(u.url).origin === origin);
  const priorities = [route.priority, upstream?.priority].filter((p) => p !== undefined);
  const path = ['routes', i, 'routeTier'];
  if (priorities.length === 0) {
    return [
      at.problem(
        path,
        `routeTier "${route.routeTier}" is given but neither the route nor its upstream has a priority section`,
        'add priority: { tiers: [...] } to the route or its upstreams entry, or remove routeTier',
      ),
    ];
  }
  const missing = priorities.find((p) => !p.tiers.includes(route.routeTier!));
  if (missing === undefined) return [];
  return [
    at.problem(
      path,
      `routeTier "${route.routeTier}" is not one of the tiers (${missing.tiers.join(', ')})`,
      `name one of ${missing.tiers.join(', ')}`,
    ),
  ];
}

/** What the library itself refuses in a section (a reserveRatio too large for the tiers, a window the breaker cannot split), placed at the option it names. */
function libraryRefusals(section: ProtectionConfig, path: ConfigPath, at: Locator): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const options = limiterOptionsOf(section);
  if (options !== undefined) {
    const refused = refusalOf(() => new ConcurrencyLimiter(options));
    const option = refused?.option?.split('.').at(-1);
    const inPriority = option === 'reserveRatio' || option === 'tiers';
    const where = inPriority
      ? [...path, 'priority', option]
      : [
          ...path,
          section.adaptive === undefined ? 'concurrency' : 'adaptive',
          ...(option === undefined ? [] : [option]),
        ];
    if (refused !== undefined)
      problems.push(
        at.problem(
          where,
          refused.message,
          inPriority
            ? 'make reserveRatio × (number of tiers - 1) less than 1'
            : 'change the number to one the limiter accepts',
        ),
      );
  }
  const breaker = section.circuitBreaker;
  if (breaker !== undefined) {
    const refused = refusalOf(() => new CircuitBreaker(breakerOptionsOf(breaker, 'check')));
    const option = refused?.option?.split('.').at(-1);
    if (refused !== undefined)
      problems.push(
        at.problem(
          [...path, 'circuitBreaker', ...(option === undefined || option === 'CircuitBreaker' ? [] : [option])],
          refused.message,
          'change the number to one the circuit breaker accepts',
        ),
      );
  }
  return problems;
}

/** The library's refusal of the options `make` builds with, or undefined when it accepts them. */
function refusalOf(make: () => unknown): FloodgateError | undefined {
  try {
    make();
    return undefined;
  } catch (err) {
    if (err instanceof FloodgateError) return err;
    throw err;
  }
}
