/**
 * Reading one descriptor file's YAML nodes strictly: each problem is kept with its file, line,
 * column and path, so that every error of a file is reported at once.
 */
import { isMap, isScalar, type LineCounter, type Node } from 'yaml';

/** ConfigError is one problem in a config file, with where it is. */
export interface ConfigError {
  readonly source: string;
  /** 1-based line and column. */
  readonly line: number;
  readonly column: number;
  /** Where in the document, e.g. `descriptors[1].rate_limit.unit`. */
  readonly path: string;
  readonly message: string;
}

/** MAX_UINT32 is the largest `requests_per_unit` (Envoy's field is a uint32). */
export const MAX_UINT32 = 4_294_967_295;

/** join returns `path` with a key (`a.b`) or an index (`a[1]`) added. */
export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/** Reader collects errors while one file is read. */
export class Reader {
  readonly errors: ConfigError[] = [];
  constructor(
    readonly source: string,
    private readonly lines: LineCounter,
  ) {}

  /** fail records `message` at `node` (the file's start when there is none) and returns undefined. */
  fail(node: Node | null | undefined, path: string, message: string): undefined {
    const { line, col } = this.position(node);
    this.errors.push({ source: this.source, line, column: col, path, message });
    return undefined;
  }

  /** position returns the 1-based line and column where `node` starts. */
  position(node: Node | null | undefined): { line: number; col: number } {
    return this.lines.linePos(node?.range?.[0] ?? 0);
  }

  /** where returns `file:line:column` of `node`. */
  where(node: Node): string {
    const { line, col } = this.position(node);
    return `${this.source}:${line}:${col}`;
  }

  /** fields returns a mapping's values by key, reporting a non-mapping and keys not in `allowed`. */
  fields(node: Node | null, path: string, allowed: readonly string[]): Map<string, Node | null> | undefined {
    if (!isMap(node)) return this.fail(node, path, `must be a mapping with keys among ${allowed.join(', ')}`);
    const out = new Map<string, Node | null>();
    for (const pair of node.items) {
      const keyNode = pair.key as Node | null;
      const key = isScalar(keyNode) ? String(keyNode.value) : undefined;
      if (key === undefined || !allowed.includes(key)) {
        this.fail(
          keyNode,
          join(path, key ?? '?'),
          `unknown key ${JSON.stringify(key ?? '?')}; expected one of ${allowed.join(', ')}`,
        );
        continue;
      }
      out.set(key, pair.value as Node | null);
    }
    return out;
  }

  /** text returns a scalar as the text written (`010` stays "010", as Envoy's service reads it into a string). */
  text(node: Node | null | undefined, path: string, what: string): string | undefined {
    if (!isScalar(node) || node.value === null || typeof node.value === 'object')
      return this.fail(node, path, `must be ${what}`);
    return typeof node.value === 'string' ? node.value : (node.source ?? String(node.value));
  }

  /** flag returns a boolean (false when absent). */
  flag(node: Node | null | undefined, path: string): boolean {
    if (node === undefined) return false;
    if (isScalar(node) && typeof node.value === 'boolean') return node.value;
    this.fail(node, path, 'must be true or false');
    return false;
  }

  /** count returns a whole number from 0 to {@link MAX_UINT32}. */
  count(node: Node | null | undefined, path: string): number | undefined {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_UINT32) return v;
    return this.fail(node, path, `must be a whole number from 0 to ${MAX_UINT32}`);
  }

  /** positive returns a number above 0 and at most {@link MAX_UINT32}. */
  positive(node: Node | null | undefined, path: string): number | undefined {
    const v = isScalar(node) ? node.value : undefined;
    if (typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= MAX_UINT32) return v;
    return this.fail(node, path, `must be a number above 0 and at most ${MAX_UINT32}`);
  }
}
