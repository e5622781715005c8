/**
 * Config problems: each mistake in a config file, located by file, line and path, with a fix.
 */
import type { Document } from 'yaml';
import { LineCounter, isNode, parseDocument } from 'yaml';

/** ConfigPath is a path into the config, such as `['routes', 0, 'rules', 1, 'cost']`. */
export type ConfigPath = readonly (string | number)[];

/** ConfigProblem is one mistake in a config file. */
export interface ConfigProblem {
  readonly file: string;
  /** 1-based line of the offending value (or of its nearest located parent); 0 when unknown. */
  readonly line: number;
  readonly column: number;
  /** The dotted path, e.g. `routes[0].rules[1].cost`; empty for the whole file. */
  readonly path: string;
  readonly message: string;
  /** How to fix it. */
  readonly hint: string;
}

/**
 * ConfigError is thrown when a config cannot be used; `problems` lists every mistake found, not
 * only the first. Its `code` is `CONFIG_INVALID` (a mistake in the file) or `CONFIG_UNREADABLE`.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(
    readonly code: 'CONFIG_INVALID' | 'CONFIG_UNREADABLE',
    readonly problems: readonly ConfigProblem[],
  ) {
    super(problems.map(formatProblem).join('\n'));
  }
}

/** formatProblem returns one problem as `file:line:column path: message (fix: hint)`. */
export function formatProblem(p: ConfigProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  const path = p.path === '' ? '' : ` ${p.path}:`;
  return `${where}${path} ${p.message} (fix: ${p.hint})`;
}

/** dottedPath returns `routes[0].rules[1].cost` for `['routes', 0, 'rules', 1, 'cost']`. */
export function dottedPath(path: ConfigPath): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out === '' ? part : `.${part}`;
  return out;
}

/** Locator places config paths on lines of one parsed file. */
export class Locator {
  constructor(
    readonly file: string,
    private readonly doc: Document | undefined,
    private readonly lines: LineCounter,
  ) {}

  /** ofText returns a locator of the config file `file` whose text is `text` (for problems found after parsing it). */
  static ofText(file: string, text: string): Locator {
    const lines = new LineCounter();
    return new Locator(file, parseDocument(text, { lineCounter: lines }), lines);
  }

  /** problem returns a located problem at `path` (a missing key is placed at its nearest parent). */
  problem(path: ConfigPath, message: string, hint: string): ConfigProblem {
    const { line, col } = this.position(path);
    return { file: this.file, line, column: col, path: dottedPath(path), message, hint };
  }

  private position(path: ConfigPath): { line: number; col: number } {
    for (let n = path.length; n >= 0 && this.doc !== undefined; n--) {
      const node = n === 0 ? this.doc.contents : this.doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range !== undefined && node.range !== null) return this.lines.linePos(node.range[0]);
    }
    return { line: 0, col: 0 };
  }
}
