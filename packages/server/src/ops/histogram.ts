/**
 * A Prometheus histogram with two labels, observed per request at the cost of a bucket search and
 * three additions: prom-client's own histogram validates and hashes the labels on every observation
 * (a few microseconds each), even through a child.
 */
import type { Registry } from 'prom-client';
import { LabelChildren } from './label-children.js';

/** HistogramCell is the running counts of one label pair. */
export class HistogramCell {
  /** counts[i] counts the observations in bucket i (not cumulative); the last is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** observe counts one value. */
  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** LabelledHistogramOptions configures a {@link LabelledHistogram}. */
export interface LabelledHistogramOptions {
  readonly name: string;
  readonly help: string;
  /** The two label names, in order. */
  readonly labelNames: readonly [string, string];
  /** Upper bounds of the buckets, ascending (`+Inf` is added). */
  readonly buckets: readonly number[];
  readonly registry: Registry;
}

/** One sample of the exposition, as prom-client's registry formats it. */
interface Sample {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}

/**
 * LabelledHistogram is registered on a prom-client `Registry` like any of its metrics and exposed in
 * the same format (`_bucket` cumulative with `le`, `_sum`, `_count`); its cells are found through
 * nested maps by label values, made on first use.
 */
export class LabelledHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  private readonly cells: HistogramCell[] = [];
  private readonly children: LabelChildren<HistogramCell>;

  constructor(private readonly options: LabelledHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    const [first, second] = options.labelNames;
    this.children = new LabelChildren((a, b) => {
      const cell = new HistogramCell(options.buckets, { [first]: a!, [second]: b! });
      this.cells.push(cell);
      return cell;
    });
    options.registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** of returns the cell of the label values `a` and `b`. */
  of(a: string, b: string | number): HistogramCell {
    return this.children.of(a, b, '');
  }

  /** get returns the samples of every cell, for the registry's scrape. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    const bounds = this.options.buckets;
    for (const cell of this.cells) {
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += cell.counts[i]!;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le: bounds[i]!, ...cell.labels },
          value: cumulative,
        });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...cell.labels }, value: cell.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...cell.labels }, value: cell.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...cell.labels }, value: cell.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** reset zeroes every cell (the registry's `resetMetrics`). */
  reset(): void {
    for (const cell of this.cells) {
      cell.counts.fill(0);
      cell.sum = 0;
      cell.count = 0;
    }
  }
}
