import { clipText, escapeXml, formatNumber, niceTicks } from './format.js';

/** Chart is one rendered chart: a file-name-safe id, its title and its SVG document. */
export interface Chart {
  readonly id: string;
  readonly title: string;
  readonly svg: string;
}

/** ChartLine is one line of a series: a value per time step. */
export interface ChartLine {
  /** Class of the path, e.g. `admitted` or `refused`. */
  readonly kind: string;
  /** One value per step; NaN where there is none (the line breaks there). */
  readonly values: Float64Array;
  /** SVG stroke-dasharray, e.g. `5 3`; solid when absent. */
  readonly dash?: string;
}

/** ChartMark is a horizontal line across the plot at a fixed value: a limit, a promise, a capacity. */
export interface ChartMark {
  /** Class of the line, e.g. `limit` or `promise`. */
  readonly kind: string;
  readonly value: number;
  /** SVG stroke-dasharray; the legend's notes say what each style means. */
  readonly dash: string;
}

/** ChartSeries is one policy's lines in a chart, drawn in one colour with one legend entry. */
export interface ChartSeries {
  readonly name: string;
  readonly color: string;
  readonly lines: readonly ChartLine[];
  /** Horizontal lines in the series' colour (its limit, its promise), when set. */
  readonly marks?: readonly ChartMark[];
}

/** LineChartOptions describes a chart of values over time. */
export interface LineChartOptions {
  /** Used for the SVG's id prefix and `data-chart`; kebab-case. */
  readonly id: string;
  readonly title: string;
  readonly yLabel: string;
  /** Width of one time step, in ms; the x axis is in seconds. */
  readonly stepMs: number;
  readonly series: readonly ChartSeries[];
  /** A grey background line (the offered load), when set. */
  readonly reference?: { readonly label: string; readonly values: Float64Array };
  /** Extra legend lines explaining the line styles, e.g. `dashed: refused`. */
  readonly notes?: readonly string[];
}

const WIDTH = 940;
const HEIGHT = 380;
const PLOT = { left: 70, right: 700, top: 44, bottom: 320 };

/**
 * renderLineChart returns a self-contained SVG document: a line chart of each series over time,
 * with an x axis (seconds) and y axis carrying ticks and labels, a light grid, one `<g
 * class="series">` per series, limit lines, and a legend. Numbers are printed to two decimals, so
 * the same options always give the same bytes.
 *
 * @example
 * const svg = renderLineChart({ id: 'admitted', title: 'Admitted per second', yLabel: 'requests/s',
 *   stepMs: 100, series: [{ name: 'fixed', color: '#0072b2', lines: [{ kind: 'admitted', values }] }] });
 */
export function renderLineChart(options: LineChartOptions): string {
  const steps = Math.max(1, ...options.series.flatMap((s) => s.lines.map((l) => l.values.length)));
  const scale = yScaleOf(options);
  const yTicks = ticksOf(scale);
  const yTop = yTicks[yTicks.length - 1]!;
  const yBottom = yTicks[0]!;
  const xSpanS = (steps * options.stepMs) / 1000;
  const xTicks = niceTicks(xSpanS, 8).filter((t) => t <= xSpanS + 1e-9);
  const x = (s: number): number => PLOT.left + (s / xSpanS) * (PLOT.right - PLOT.left);
  // A value above the scale (a spike) is drawn at the top edge and marked there.
  const y = (v: number): number =>
    PLOT.bottom - ((Math.max(yBottom, Math.min(v, yTop)) - yBottom) / (yTop - yBottom)) * (PLOT.bottom - PLOT.top);
  const pointX = (i: number): number => x(((i + 0.5) * options.stepMs) / 1000);
  const notes = [...(options.notes ?? []), ...coincidences(options.series)];
  if (scale.spikes) notes.push('▲ beyond the scale: a spike,', '   its peak written beside it');
  // The legend may run below the plot when there are many series: the picture grows to hold it.
  const legendRows = options.series.length + (options.reference === undefined ? 0 : 1) + notes.length;
  const height = Math.max(HEIGHT, PLOT.top + legendRows * 20 + 16);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="${options.id}-title" data-chart="${options.id}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<title id="${options.id}-title">${escapeXml(options.title)}</title>`,
    `<rect class="background" x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text class="chart-title" x="${PLOT.left}" y="24" font-size="15" font-weight="bold" fill="#222">${escapeXml(options.title)}</text>`,
    grid(yTicks, y),
    xAxis(xTicks, x),
    yAxis(yTicks, y, options.yLabel),
  ];
  if (options.reference !== undefined) {
    parts.push(
      `<g class="reference" data-name="${escapeXml(options.reference.label)}"><path class="line" d="${pathOf(options.reference.values, pointX, y)}" fill="none" stroke="#b0b0b0" stroke-width="1.5"/></g>`,
    );
  }
  for (const series of options.series) parts.push(seriesGroup(series, pointX, y));
  if (scale.spikes) parts.push(spikeMarks(options, pointX, yTop));
  parts.push(legend(options, notes), '</svg>');
  return parts.join('\n') + '\n';
}

/**
 * The top of the y scale: a little above the largest value, unless a few values (a burst's
 * spike) stand more than 4 times above the rest, which would flatten every other line: then a
 * little above the 90th percentile of the values above 0 (and the marks), and the spikes
 * are drawn clipped and marked.
 */
function yScaleOf(options: LineChartOptions): { top: number; bottom: number; spikes: boolean } {
  const values: number[] = [];
  let marks = 0;
  let bottom = 0;
  for (const s of options.series) {
    for (const l of s.lines) for (const v of l.values) if (Number.isFinite(v)) values.push(v);
    for (const m of s.marks ?? []) if (Number.isFinite(m.value)) marks = Math.max(marks, m.value);
  }
  if (options.reference !== undefined) for (const v of options.reference.values) if (Number.isFinite(v)) values.push(v);
  for (const v of values) if (v < bottom) bottom = v;
  const nonzero = values.filter((v) => v > 0).sort((a, b) => a - b);
  const max = Math.max(nonzero[nonzero.length - 1] ?? 0, marks);
  const usual = Math.max(nonzero[Math.max(0, Math.ceil(nonzero.length * 0.9) - 1)] ?? 0, marks);
  if (usual > 0 && max > 4 * usual) return { top: usual * 1.3, bottom, spikes: true };
  return { top: Math.max(max * 1.05, 1), bottom, spikes: false };
}

/** The y ticks: round steps from 0 up to the top, and down below 0 when a value is negative (a bucket in debt). */
function ticksOf(scale: { top: number; bottom: number }): number[] {
  if (scale.bottom >= 0) return niceTicks(scale.top);
  const step = niceTicks(scale.top - scale.bottom)[1]!;
  const ticks: number[] = [];
  for (let v = -Math.ceil(-scale.bottom / step) * step; ; v += step) {
    ticks.push(Number(v.toPrecision(12)));
    if (v >= scale.top) break;
  }
  return ticks;
}

/** A triangle at the top edge over each value beyond the scale, and each line's highest value written beside it once. */
function spikeMarks(options: LineChartOptions, x: (i: number) => number, top: number): string {
  const parts: string[] = [];
  const lines = [
    ...options.series.flatMap((s) => s.lines.map((l) => ({ values: l.values, color: s.color }))),
    ...(options.reference === undefined ? [] : [{ values: options.reference.values, color: '#888888' }]),
  ];
  const placed: Array<{ x: number; text: string }> = [];
  for (const { values, color } of lines) {
    let peak = -1;
    const triangles: string[] = [];
    for (let i = 0; i < values.length; i++) {
      if (!(values[i]! > top)) continue;
      triangles.push(`M${coord(x(i) - 4)} ${PLOT.top - 2}h8l-4 -7z`);
      if (peak < 0 || values[i]! > values[peak]!) peak = i;
    }
    if (peak < 0) continue;
    parts.push(`<path class="spike" d="${triangles.join('')}" fill="${color}"/>`);
    // Labels of peaks close together go one under the other; the same figure nearby is written once.
    const text = formatNumber(values[peak]!, 1);
    const near = placed.filter((p) => Math.abs(p.x - x(peak)) < 45);
    if (near.some((p) => p.text === text)) continue;
    const row = near.length;
    placed.push({ x: x(peak), text });
    parts.push(
      `<text class="spike-label" x="${coord(x(peak) + 7)}" y="${PLOT.top + 10 + 13 * row}" fill="${color}" stroke="#ffffff" stroke-width="3" paint-order="stroke">${text}</text>`,
    );
  }
  return `<g class="spikes">${parts.join('')}</g>`;
}

/** Legend notes naming the series whose lines are identical to an earlier one's: drawn on top of it, they hide it. */
function coincidences(series: readonly ChartSeries[]): string[] {
  const notes: string[] = [];
  for (let j = 1; j < series.length; j++) {
    const same = series.slice(0, j).find((earlier) => sameLines(earlier, series[j]!));
    if (same !== undefined) notes.push(`${clipText(series[j]!.name, 12)} = ${clipText(same.name, 12)} (coincide)`);
  }
  return notes;
}

function sameLines(a: ChartSeries, b: ChartSeries): boolean {
  if (a.lines.length !== b.lines.length) return false;
  return a.lines.every((line, k) => {
    const other = b.lines[k]!.values;
    return line.values.length === other.length && line.values.every((v, i) => Object.is(v, other[i]));
  });
}

/**
 * The line through the values; a NaN (no value in that step) breaks it, and the next value starts
 * a new piece. More steps than the plot has pixels are drawn as each pixel column's lowest and
 * highest value, in the order they came: the same picture, in a path a few kB long.
 */
function pathOf(values: Float64Array, x: (i: number) => number, y: (v: number) => number): string {
  const points: string[] = [];
  const dense = values.length > PLOT.right - PLOT.left;
  let gap = true;
  for (let i = 0; i < values.length;) {
    if (Number.isNaN(values[i]!)) {
      gap = true;
      i++;
      continue;
    }
    let end = i + 1;
    if (dense)
      while (end < values.length && !Number.isNaN(values[end]!) && Math.floor(x(end)) === Math.floor(x(i))) end++;
    let low = i;
    let high = i;
    for (let k = i + 1; k < end; k++) {
      if (values[k]! < values[low]!) low = k;
      if (values[k]! > values[high]!) high = k;
    }
    for (const k of low === high ? [low] : [Math.min(low, high), Math.max(low, high)]) {
      points.push(`${gap ? 'M' : 'L'}${coord(x(k))} ${coord(y(values[k]!))}`);
      gap = false;
    }
    i = end;
  }
  return points.join(' ');
}

function coord(value: number): string {
  return formatNumber(value, 1);
}

function grid(ticks: number[], y: (v: number) => number): string {
  const lines = ticks.map(
    (t) => `<line x1="${PLOT.left}" x2="${PLOT.right}" y1="${coord(y(t))}" y2="${coord(y(t))}" stroke="#ececec"/>`,
  );
  return `<g class="grid">${lines.join('')}</g>`;
}

function xAxis(ticks: number[], x: (s: number) => number): string {
  const marks = ticks.map(
    (t) =>
      `<g class="tick"><line x1="${coord(x(t))}" x2="${coord(x(t))}" y1="${PLOT.bottom}" y2="${PLOT.bottom + 6}" stroke="#333"/><text x="${coord(x(t))}" y="${PLOT.bottom + 20}" text-anchor="middle" fill="#333">${formatNumber(t)}</text></g>`,
  );
  return [
    `<g class="axis x-axis">`,
    `<line class="domain" x1="${PLOT.left}" x2="${PLOT.right}" y1="${PLOT.bottom}" y2="${PLOT.bottom}" stroke="#333"/>`,
    ...marks,
    `<text class="axis-label" x="${(PLOT.left + PLOT.right) / 2}" y="${PLOT.bottom + 44}" text-anchor="middle" fill="#222">time (s)</text>`,
    `</g>`,
  ].join('\n');
}

function yAxis(ticks: number[], y: (v: number) => number, label: string): string {
  const marks = ticks.map(
    (t) =>
      `<g class="tick"><line x1="${PLOT.left - 6}" x2="${PLOT.left}" y1="${coord(y(t))}" y2="${coord(y(t))}" stroke="#333"/><text x="${PLOT.left - 9}" y="${coord(y(t) + 4)}" text-anchor="end" fill="#333">${formatNumber(t)}</text></g>`,
  );
  const middle = (PLOT.top + PLOT.bottom) / 2;
  return [
    `<g class="axis y-axis">`,
    `<line class="domain" x1="${PLOT.left}" x2="${PLOT.left}" y1="${PLOT.top}" y2="${PLOT.bottom}" stroke="#333"/>`,
    ...marks,
    `<text class="axis-label" x="16" y="${middle}" text-anchor="middle" fill="#222" transform="rotate(-90 16 ${middle})">${escapeXml(label)}</text>`,
    `</g>`,
  ].join('\n');
}

function seriesGroup(series: ChartSeries, x: (i: number) => number, y: (v: number) => number): string {
  const name = escapeXml(series.name);
  const lines = series.lines.map(
    (l) =>
      `<path class="line ${l.kind}" d="${pathOf(l.values, x, y)}" fill="none" stroke="${series.color}" stroke-width="2"${l.dash === undefined ? '' : ` stroke-dasharray="${l.dash}"`} stroke-linejoin="round"/>`,
  );
  for (const mark of series.marks ?? []) {
    if (!Number.isFinite(mark.value)) continue;
    const ly = coord(y(mark.value));
    lines.push(
      `<line class="${mark.kind}" x1="${PLOT.left}" x2="${PLOT.right}" y1="${ly}" y2="${ly}" stroke="${series.color}" stroke-width="1.5" stroke-dasharray="${mark.dash}" opacity="0.8"/>`,
    );
  }
  return `<g class="series" data-name="${name}">\n${lines.join('\n')}\n</g>`;
}

function legend(options: LineChartOptions, notes: readonly string[]): string {
  const left = PLOT.right + 20;
  const items = options.series.map(
    (s, i) =>
      `<g class="legend-item" data-name="${escapeXml(s.name)}"><rect x="${left}" y="${PLOT.top + i * 20}" width="14" height="14" fill="${s.color}"/><text x="${left + 20}" y="${PLOT.top + i * 20 + 11}" fill="#222">${escapeXml(clipText(s.name, 24))}</text></g>`,
  );
  let row = options.series.length;
  if (options.reference !== undefined) {
    items.push(
      `<g class="legend-item reference"><rect x="${left}" y="${PLOT.top + row * 20 + 6}" width="14" height="3" fill="#b0b0b0"/><text x="${left + 20}" y="${PLOT.top + row * 20 + 11}" fill="#555">${escapeXml(options.reference.label)}</text></g>`,
    );
    row++;
  }
  for (const note of notes) {
    items.push(
      `<text class="legend-note" x="${left}" y="${PLOT.top + row * 20 + 11}" fill="#555">${escapeXml(note)}</text>`,
    );
    row++;
  }
  return `<g class="legend">\n${items.join('\n')}\n</g>`;
}
