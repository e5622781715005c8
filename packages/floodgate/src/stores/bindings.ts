import type { Algorithm } from '../core/algorithm.js';

/**
 * Bindings counts a store's binds of each policy's table: made on the first bind, handed back by the
 * release that undoes the last one (for the store to close), and all handed back at once on close.
 */
export class Bindings<T> {
  private readonly tables = new Map<Algorithm, { table: T; binds: number }>();

  /** bind returns `algorithm`'s table, made by `make` on first use, and counts the bind. */
  bind(algorithm: Algorithm, make: () => T): T {
    let entry = this.tables.get(algorithm);
    if (entry === undefined) {
      entry = { table: make(), binds: 0 };
      this.tables.set(algorithm, entry);
    }
    entry.binds++;
    return entry.table;
  }

  /** release undoes one bind, and returns the table once nobody binds it (forgotten here), else undefined. */
  release(algorithm: Algorithm): T | undefined {
    const entry = this.tables.get(algorithm);
    if (entry === undefined || --entry.binds > 0) return undefined;
    this.tables.delete(algorithm);
    return entry.table;
  }

  /** drain returns every table and forgets them all. */
  drain(): T[] {
    const tables = [...this.tables.values()].map((e) => e.table);
    this.tables.clear();
    return tables;
  }
}
