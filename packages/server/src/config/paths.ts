/**
 * Route path patterns: `/users/:id/posts` (a `:name` matches one non-empty segment) and a final
 * `*` matching the rest of the path, none included (`/api/*` matches `/api`, `/api/` and `/api/a/b`).
 */

/** PathPattern is a compiled pattern; `match` returns its parameters, or undefined when the path does not match. */
export interface PathPattern {
  readonly source: string;
  match(path: string): Record<string, string> | undefined;
}

/** compilePath returns the matcher of a pattern. */
export function compilePath(source: string): PathPattern {
  const segments = source.split('/').slice(1);
  const rest = segments.at(-1) === '*';
  const fixed = rest ? segments.slice(0, -1) : segments;
  const names = fixed.map((s) => (s.startsWith(':') ? s.slice(1) : undefined));
  const noParams = names.every((n) => n === undefined);
  if (noParams && !rest) return { source, match: (path) => (path === source ? {} : undefined) };
  if (noParams && rest) {
    const prefix = '/' + fixed.join('/');
    const base = prefix === '/' ? '' : prefix;
    return {
      source,
      match: (path) =>
        path === base || path.startsWith(base + '/') || (base === '' && path.startsWith('/')) ? {} : undefined,
    };
  }
  return {
    source,
    match(path) {
      const parts = path.split('/').slice(1);
      if (rest ? parts.length < fixed.length : parts.length !== fixed.length) return undefined;
      const params: Record<string, string> = {};
      for (let i = 0; i < fixed.length; i++) {
        const part = parts[i]!;
        const name = names[i];
        if (name !== undefined) {
          if (part === '') return undefined;
          params[name] = safeDecode(part);
        } else if (part !== fixed[i]) return undefined;
      }
      return params;
    },
  };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** paramNamesOf returns the `:name` parameters of a pattern, in order. */
export function paramNamesOf(source: string): string[] {
  return source
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1));
}

/** patternCovers tells whether every path `later` matches is matched by `earlier` too. */
export function patternCovers(earlier: string, later: string): boolean {
  const e = earlier.split('/').slice(1);
  const l = later.split('/').slice(1);
  const eRest = e.at(-1) === '*';
  const eFixed = eRest ? e.slice(0, -1) : e;
  if (!eRest && (l.at(-1) === '*' || l.length !== e.length)) return false;
  if (eRest && l.length < eFixed.length) return false;
  for (let i = 0; i < eFixed.length; i++) {
    const a = eFixed[i]!;
    const b = l[i]!;
    if (b === '*') return false;
    if (a.startsWith(':')) continue;
    if (a !== b) return false;
  }
  return true;
}
