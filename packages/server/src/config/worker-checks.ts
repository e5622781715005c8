/**
 * The checks of a config run by several workers (`workers:` above 1, or `auto`) that the schema
 * cannot express: what would not be one limit for the host.
 */
import type { ConfigProblem, Locator } from './problems.js';
import type { GatewayConfig } from './schema.js';

/** The smooth policies: they pace in the process that runs them, or on Redis for every process. */
const SMOOTH: ReadonlySet<string> = new Set(['smoothBursty', 'smoothWarmingUp']);

/**
 * workerProblems returns the problems of running `config` with `workers` workers (the config's own
 * setting unless a command line overrides it): a smooth policy on the memory store paces in each
 * worker at its full rate, so the host would pass N times it.
 */
export function workerProblems(config: GatewayConfig, workers: number | 'auto', at: Locator): ConfigProblem[] {
  if (workers === 1 || config.store.type !== 'memory') return [];
  const problems: ConfigProblem[] = [];
  config.routes.forEach((route, i) =>
    route.rules.forEach((rule, j) => {
      if (SMOOTH.has(rule.policy.algorithm))
        problems.push(
          at.problem(
            ['routes', i, 'rules', j, 'policy', 'algorithm'],
            `a ${rule.policy.algorithm} policy paces in the process that runs it: with workers: ${String(workers)} on the memory store every worker would pace at the full rate, and the host pass that many times it`,
            'use a Redis store (every process paces on it together), or workers: 1 for this config',
          ),
        );
    }),
  );
  return problems;
}
