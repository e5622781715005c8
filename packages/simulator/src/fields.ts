import { SimulatorError, describe } from './errors.js';

/** NumberRule says what a numeric field accepts. */
export interface NumberRule {
  /** Smallest value accepted (inclusive unless `above` is set). */
  min?: number;
  /** When true, the value must be strictly greater than `min`. */
  above?: boolean;
  /** Largest value accepted (inclusive). */
  max?: number;
  /** When true, only whole numbers are accepted. */
  integer?: boolean;
}

/**
 * Fields reads one object of a scenario with strict checks: every read names the field by its
 * dotted path (`policies[0].policy.limit`), and {@link Fields.done} rejects keys nobody read, so a
 * misspelt option is an error rather than a silent default.
 */
export class Fields {
  private readonly seen = new Set<string>();
  private readonly object: Record<string, unknown>;

  /** Wraps `value`, which must be a plain object, found at `path`. */
  constructor(
    value: unknown,
    readonly path: string,
  ) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      if (path === '')
        throw new SimulatorError(
          'INVALID_SCENARIO',
          `a scenario must be a mapping of fields (durationMs, traffic, policies), got ${describe(value)}`,
          '',
        );
      throw invalid(path, `must be an object, got ${describe(value)}`);
    }
    this.object = value as Record<string, unknown>;
  }

  /** at returns the dotted path of field `name`. */
  at(name: string): string {
    return this.path === '' ? name : `${this.path}.${name}`;
  }

  /** has returns whether field `name` is present (not undefined). */
  has(name: string): boolean {
    return this.object[name] !== undefined;
  }

  /** raw returns field `name` unchecked, marking it read. */
  raw(name: string): unknown {
    this.seen.add(name);
    return this.object[name];
  }

  /**
   * required returns field `name` unchecked (marking it read), or throws when it is absent: as an unknown field when the
   * object holds a key nobody reads that is a likely misspelling of `name` (`limt` for `limit`),
   * else as a missing one.
   */
  required(name: string): unknown {
    const value = this.raw(name);
    if (value !== undefined) return value;
    const misspelt = Object.keys(this.object).find((k) => !this.seen.has(k) && isNear(k, name));
    if (misspelt !== undefined) throw invalid(this.at(misspelt), `is not a known field; did you mean ${name}?`);
    return value;
  }

  /** number returns field `name` as a finite number within `rule`; `fallback` when absent (required if no fallback). */
  number(name: string, rule: NumberRule = {}, fallback?: number): number {
    const value = fallback === undefined ? this.required(name) : this.raw(name);
    if (value === undefined && fallback !== undefined) return fallback;
    const where = this.at(name);
    if (typeof value !== 'number' || Number.isNaN(value))
      throw invalid(where, `must be a number, got ${describe(value)}`);
    if (rule.integer === true && !Number.isSafeInteger(value))
      throw invalid(where, `must be a whole number, got ${describe(value)}`);
    if (!Number.isFinite(value) && rule.max !== Infinity)
      throw invalid(where, `must be finite, got ${describe(value)}`);
    if (rule.min !== undefined && (rule.above === true ? value <= rule.min : value < rule.min)) {
      throw invalid(
        where,
        `must be ${rule.above === true ? 'greater than' : 'at least'} ${rule.min}, got ${describe(value)}`,
      );
    }
    if (rule.max !== undefined && value > rule.max)
      throw invalid(where, `must be at most ${rule.max}, got ${describe(value)}`);
    return value;
  }

  /** optionalNumber returns field `name` checked by `rule`, or undefined when absent. */
  optionalNumber(name: string, rule: NumberRule = {}): number | undefined {
    return this.has(name) ? this.number(name, rule) : (this.raw(name) as undefined);
  }

  /** string returns field `name` as a non-empty string; `fallback` when absent (required if no fallback). */
  string(name: string, fallback?: string): string {
    const value = fallback === undefined ? this.required(name) : this.raw(name);
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || value === '')
      throw invalid(this.at(name), `must be a non-empty string, got ${describe(value)}`);
    return value;
  }

  /** choice returns field `name` when it is one of `options`; `fallback` when absent (required if no fallback). */
  choice<T extends string>(name: string, options: readonly T[], fallback?: T): T {
    const value = fallback === undefined ? this.required(name) : this.raw(name);
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || !(options as readonly string[]).includes(value)) {
      throw invalid(this.at(name), `must be one of ${options.map((o) => `'${o}'`).join(', ')}, got ${describe(value)}`);
    }
    return value as T;
  }

  /** array returns field `name` as an array (at least `minLength` long); `[]` when absent and `minLength` is 0. */
  array(name: string, minLength = 0): unknown[] {
    const value = minLength === 0 ? this.raw(name) : this.required(name);
    if (value === undefined && minLength === 0) return [];
    if (!Array.isArray(value)) throw invalid(this.at(name), `must be a list, got ${describe(value)}`);
    if (value.length < minLength)
      throw invalid(this.at(name), `must hold at least ${minLength} item(s), got ${value.length}`);
    return value;
  }

  /** done throws when the object holds a key that was never read: an unknown field, with the nearest known one. */
  done(): void {
    for (const key of Object.keys(this.object)) {
      if (this.seen.has(key) || this.object[key] === undefined) continue;
      const near = [...this.seen].find((known) => isNear(key, known));
      const known = [...this.seen].join(', ');
      throw invalid(
        this.at(key),
        near === undefined
          ? `is not a known field here (known: ${known})`
          : `is not a known field; did you mean ${near}?`,
      );
    }
  }
}

/** isNear returns whether `a` is a likely misspelling of `b`: the same ignoring case, or at most two edits apart (one for short names). */
export function isNear(a: string, b: string): boolean {
  if (a.toLowerCase() === b.toLowerCase()) return true;
  const most = Math.min(a.length, b.length) <= 4 ? 1 : 2;
  return Math.abs(a.length - b.length) <= most && editDistance(a.toLowerCase(), b.toLowerCase()) <= most;
}

/** editDistance returns the Levenshtein distance between `a` and `b` (insertions, deletions, substitutions). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** invalid returns an `INVALID_SCENARIO` {@link SimulatorError} for the field at `path`. */
export function invalid(path: string, problem: string): SimulatorError {
  return new SimulatorError('INVALID_SCENARIO', `scenario field ${path} ${problem}`, path);
}
