/**
 * Route path patterns: `/users/:id/posts` (a `:name` matches one non-empty segment) and a final
 * `*` matching the rest of the path, none included (`/api/*` matches `/api`, `/api/` and `/api/a/b`).
 * Patterns match paths in normal form, in or regardless of case, with or without a trailing slash,
 * as each route says (see {@link MatchOptions}).
 */

/** PathPattern is a compiled pattern; `match` returns its parameters, or undefined when the path does not match. */
export interface PathPattern {
  readonly source: string;
  /**
   * match returns the parameters of a path in normal form (see `normal-path.ts`), or undefined;
   * {@link NO_PARAMS} itself for a pattern without parameters.
   */
  match(path: string): Readonly<Record<string, string>> | undefined;
}

/** NO_PARAMS is what a pattern without `:name` segments matches with: one object, never one per request. */
export const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * MatchOptions says which spellings of a path are one resource, as the upstream's router sees
 * them. The defaults are Express's: case-insensitive, and `/a/` the same as `/a`.
 */
export interface MatchOptions {
  /** Whether `/API` and `/api` differ (default false). */
  readonly caseSensitive?: boolean;
  /** Whether `/a/` and `/a` differ (default false). */
  readonly strictTrailingSlash?: boolean;
}

/**
 * compilePath returns the matcher of a pattern. Letters are compared in ASCII case only (a normal
 * path has every other character percent-encoded), and without allocating for literal patterns.
 */
export function compilePath(source: string, options: MatchOptions = {}): PathPattern {
  const caseSensitive = options.caseSensitive ?? false;
  const strict = options.strictTrailingSlash ?? false;
  const same = caseSensitive ? sameExactly : sameIgnoringCase;
  const segments = source.split('/').slice(1);
  const rest = segments.at(-1) === '*';
  if (!strict && !rest && segments.length > 1 && segments.at(-1) === '') segments.pop();
  const fixed = rest ? segments.slice(0, -1) : segments;
  const names = fixed.map((s) => (s.startsWith(':') ? s.slice(1) : undefined));
  const base = '/' + fixed.join('/');
  let match: PathPattern['match'];
  if (names.some((n) => n !== undefined)) match = parametersMatch({ fixed, names, rest, strict, same });
  else if (rest) match = prefixMatch(base === '/' ? '' : base, same);
  else match = literalMatch(base, strict, same);
  return { source, match };
}

type Same = (a: string, b: string, n: number) => boolean;

/** A pattern with no parameter or wildcard: the path itself, or with one trailing slash unless strict. */
function literalMatch(base: string, strict: boolean, same: Same): PathPattern['match'] {
  const slashToo = !strict && base !== '/';
  return (path) =>
    (path.length === base.length || (slashToo && path.length === base.length + 1 && path.endsWith('/'))) &&
    same(path, base, base.length)
      ? NO_PARAMS
      : undefined;
}

/** A pattern `/prefix/*`: the prefix alone, or followed by `/` and anything. */
function prefixMatch(prefix: string, same: Same): PathPattern['match'] {
  return (path) =>
    path.length >= prefix.length &&
    same(path, prefix, prefix.length) &&
    (path.length === prefix.length || path.charCodeAt(prefix.length) === 0x2f)
      ? NO_PARAMS
      : undefined;
}

/** A pattern with `:name` segments, segment by segment. */
function parametersMatch(p: {
  fixed: readonly string[];
  names: readonly (string | undefined)[];
  rest: boolean;
  strict: boolean;
  same: Same;
}): PathPattern['match'] {
  const { fixed, names, rest, strict, same } = p;
  return (path) => {
    const parts = path.split('/').slice(1);
    if (!strict && !rest && parts.length > 1 && parts.at(-1) === '') parts.pop();
    if (rest ? parts.length < fixed.length : parts.length !== fixed.length) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < fixed.length; i++) {
      const part = parts[i]!;
      const name = names[i];
      const want = fixed[i]!;
      if (name !== undefined) {
        if (part === '') return undefined;
        params[name] = safeDecode(part);
      } else if (part.length !== want.length || !same(part, want, want.length)) return undefined;
    }
    return params;
  };
}

/** Whether `a` starts with `b` (the `n` code units of `b`). */
function sameExactly(a: string, b: string): boolean {
  return a.startsWith(b);
}

/** Whether the first `n` code units of `a` and `b` are equal, ASCII letters in either case. */
function sameIgnoringCase(a: string, b: string, n: number): boolean {
  if (a.length < n || b.length < n) return false;
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0x41 && x <= 0x5a) x += 0x20;
    if (y >= 0x41 && y <= 0x5a) y += 0x20;
    if (x !== y) return false;
  }
  return true;
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

/**
 * patternCovers tells whether every path `later` matches (with `laterOptions`) is matched by
 * `earlier` (with `earlierOptions`) too.
 */
export function patternCovers(
  earlier: string,
  later: string,
  earlierOptions: MatchOptions = {},
  laterOptions: MatchOptions = {},
): boolean {
  const eCase = earlierOptions.caseSensitive ?? false;
  const lCase = laterOptions.caseSensitive ?? false;
  // A case-sensitive earlier pattern misses the other spellings a case-insensitive later one matches.
  if (eCase && !lCase && /[A-Za-z]/.test(earlier.replace(/:[^/]*/g, ''))) return false;
  const fold = (s: string): string => (eCase ? s : s.toLowerCase());
  const e = fold(earlier).split('/').slice(1);
  const l = fold(later).split('/').slice(1);
  const eRest = e.at(-1) === '*';
  const lRest = l.at(-1) === '*';
  if (!eRest && (earlierOptions.strictTrailingSlash ?? false) !== (laterOptions.strictTrailingSlash ?? false)) {
    // A strict earlier pattern misses the trailing-slash spelling a lenient later one matches.
    if (earlierOptions.strictTrailingSlash ?? false) return false;
  }
  if (!(earlierOptions.strictTrailingSlash ?? false)) {
    if (!eRest && e.length > 1 && e.at(-1) === '') e.pop();
    if (!lRest && l.length > 1 && l.at(-1) === '') l.pop();
  }
  const eFixed = eRest ? e.slice(0, -1) : e;
  if (!eRest && (lRest || l.length !== e.length)) return false;
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
