/**
 * Labelled metric children found without hashing a label object per call, and counts kept as plain
 * numbers per request and handed to prom-client at each scrape.
 */

/** PendingCount is a labelled counter child with the increments it has not been handed yet. */
export interface PendingCount {
  readonly child: { inc(value: number): void };
  pending: number;
}

/** PendingCounts holds a counter's children with their pending increments, handed over by {@link PendingCounts.flush}. */
export class PendingCounts {
  private readonly cells: PendingCount[] = [];
  /** The cells by label values: add to a cell's `pending`. */
  readonly children: LabelChildren<PendingCount>;

  constructor(make: (...values: string[]) => { inc(value: number): void }) {
    this.children = new LabelChildren((...values) => {
      const cell: PendingCount = { child: make(...values), pending: 0 };
      this.cells.push(cell);
      return cell;
    });
  }

  /** flush hands every pending increment to its child (called by the counter's `collect`, at each scrape). */
  flush(): void {
    for (const cell of this.cells) {
      if (cell.pending === 0) continue;
      cell.child.inc(cell.pending);
      cell.pending = 0;
    }
  }
}

/**
 * LabelChildren finds a metric's child by up to three label values through nested maps: prom-client
 * would hash a label object on every call, and a joined key would build a new string per call. The
 * child found last is kept with its values: a run of requests on one route and rule (the usual
 * traffic) finds it by three comparisons, with no map looked into.
 */
export class LabelChildren<T> {
  private readonly root = new Map<string | number, Map<string | number, Map<string, T>>>();
  private lastA: string | undefined = undefined;
  private lastB: string | number | undefined = undefined;
  private lastC: string | undefined = undefined;
  private last: T | undefined = undefined;

  constructor(private readonly make: (...values: string[]) => T) {}

  /** of returns the child for the values (`''` for an unused third), made on first use. */
  of(a: string, b: string | number, c: string): T {
    if (a === this.lastA && b === this.lastB && c === this.lastC) return this.last!;
    const child = this.find(a, b, c);
    this.lastA = a;
    this.lastB = b;
    this.lastC = c;
    this.last = child;
    return child;
  }

  private find(a: string, b: string | number, c: string): T {
    let byB = this.root.get(a);
    if (byB === undefined) this.root.set(a, (byB = new Map()));
    let byC = byB.get(b);
    if (byC === undefined) byB.set(b, (byC = new Map()));
    let child = byC.get(c);
    if (child === undefined) {
      child = c === '' ? this.make(a, String(b)) : this.make(a, String(b), c);
      byC.set(c, child);
    }
    return child;
  }
}
