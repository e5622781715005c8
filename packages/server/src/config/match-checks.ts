/** The checks of a route's match that no schema expresses: a path pattern must be in normal form. */
import { normalizeTarget } from './normal-path.js';
import type { ConfigPath, ConfigProblem, Locator } from './problems.js';
import type { RouteConfig } from './schema.js';

/**
 * checkMatch returns the problems of a route's `match`: a path pattern not in normal form could
 * never match, since requests are matched on their paths in normal form.
 */
export function checkMatch(route: RouteConfig, path: ConfigPath, at: Locator): ConfigProblem[] {
  const pattern = route.match.path;
  const normal = normalizeTarget(pattern);
  if (normal !== undefined && normal.path === pattern && normal.ambiguities === 0) return [];
  const written = normal?.path ?? pattern;
  return [
    at.problem(
      [...path, 'match', 'path'],
      `the path pattern ${pattern} is not in normal form: requests are matched on their paths in normal form (${written}), so it would never match as written`,
      `write ${written}${pattern.includes('?') ? ' without a query' : ''} (no //, . or .. segments, ; parameters, %2F or \\, and unreserved characters unescaped)`,
    ),
  ];
}
