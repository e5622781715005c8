/**
 * The overload bench's charts, as plain SVG: goodput against offered load (drawn here, on a log
 * axis), and the concurrency limit and goodput over time through a capacity cut (the simulator's
 * line chart).
 */
import { renderLineChart, type ChartSeries } from 'floodgate-simulator';
import type { LaneId } from './lanes.js';
import type { Sample } from './rig.js';

/** LANE_COLORS are the lanes' colours (Okabe-Ito, readable with colour blindness). */
export const LANE_COLORS: Record<LaneId, string> = {
  none: '#d55e00',
  'token-bucket': '#e69f00',
  static: '#0072b2',
  adaptive: '#009e73',
};

/** GoodputLine is one lane's goodput ÷ capacity at each offered load (× capacity). */
export interface GoodputLine {
  readonly lane: LaneId;
  readonly label: string;
  readonly points: ReadonlyArray<{ readonly load: number; readonly goodput: number }>;
}

const W = 760;
const H = 420;
const P = { left: 70, right: 520, top: 50, bottom: 350 };
const f = (x: number): string => (Math.round(x * 100) / 100).toString();
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** goodputChart returns an SVG document: goodput ÷ capacity (y, 0 to 1.1) against offered load (x, log scale), one line per lane, the ideal dashed. */
export function goodputChart(lines: readonly GoodputLine[], title: string): string {
  const loads = [...new Set(lines.flatMap((l) => l.points.map((p) => p.load)))].sort((a, b) => a - b);
  const lo = Math.log10(loads[0] ?? 0.5);
  const hi = Math.log10(loads[loads.length - 1] ?? 10);
  const x = (load: number): number => P.left + ((Math.log10(load) - lo) / Math.max(hi - lo, 1e-9)) * (P.right - P.left);
  const y = (v: number): number => P.bottom - (Math.min(Math.max(v, 0), 1.1) / 1.1) * (P.bottom - P.top);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${P.left}" y="26" font-size="15" font-weight="bold" fill="#222">${esc(title)}</text>`,
  ];
  for (const v of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    parts.push(
      `<line x1="${P.left}" x2="${P.right}" y1="${f(y(v))}" y2="${f(y(v))}" stroke="#ececec"/>`,
      `<text x="${P.left - 8}" y="${f(y(v) + 4)}" text-anchor="end" fill="#333">${v}</text>`,
    );
  }
  for (const load of loads) {
    parts.push(
      `<line x1="${f(x(load))}" x2="${f(x(load))}" y1="${P.bottom}" y2="${P.bottom + 6}" stroke="#333"/>`,
      `<text x="${f(x(load))}" y="${P.bottom + 20}" text-anchor="middle" fill="#333">${load}x</text>`,
    );
  }
  parts.push(
    `<line x1="${P.left}" x2="${P.right}" y1="${P.bottom}" y2="${P.bottom}" stroke="#333"/>`,
    `<line x1="${P.left}" x2="${P.left}" y1="${P.top}" y2="${P.bottom}" stroke="#333"/>`,
    `<text x="${(P.left + P.right) / 2}" y="${P.bottom + 42}" text-anchor="middle" fill="#222">offered load (× capacity, log scale)</text>`,
    `<text x="18" y="${(P.top + P.bottom) / 2}" text-anchor="middle" fill="#222" transform="rotate(-90 18 ${(P.top + P.bottom) / 2})">goodput ÷ capacity</text>`,
  );
  const ideal = loads.map((l, i) => `${i === 0 ? 'M' : 'L'}${f(x(l))} ${f(y(Math.min(l, 1)))}`).join(' ');
  parts.push(`<path d="${ideal}" fill="none" stroke="#b0b0b0" stroke-width="1.5" stroke-dasharray="6 4"/>`);
  lines.forEach((line, i) => {
    const color = LANE_COLORS[line.lane];
    const pts = line.points.filter((p) => Number.isFinite(p.goodput));
    parts.push(
      `<g data-lane="${line.lane}"><path d="${pts.map((p, j) => `${j === 0 ? 'M' : 'L'}${f(x(p.load))} ${f(y(p.goodput))}`).join(' ')}" fill="none" stroke="${color}" stroke-width="2.5"/>`,
    );
    for (const p of pts) parts.push(`<circle cx="${f(x(p.load))}" cy="${f(y(p.goodput))}" r="3.5" fill="${color}"/>`);
    parts.push(
      `</g>`,
      `<rect x="${P.right + 20}" y="${P.top + i * 22}" width="14" height="14" fill="${color}"/><text x="${P.right + 40}" y="${P.top + i * 22 + 11}" fill="#222">${esc(line.label)}</text>`,
    );
  });
  const note = P.top + lines.length * 22 + 6;
  parts.push(
    `<line x1="${P.right + 20}" x2="${P.right + 34}" y1="${note}" y2="${note}" stroke="#b0b0b0" stroke-width="1.5" stroke-dasharray="6 4"/><text x="${P.right + 40}" y="${note + 4}" fill="#555">ideal: min(offered, capacity)</text>`,
  );
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

/** stepValues resamples `(atMs, value)` points to `steps` buckets of `stepMs`: each bucket takes the last point at or before its middle. */
export function stepValues(
  points: ReadonlyArray<{ atMs: number; value: number }>,
  stepMs: number,
  steps: number,
): Float64Array {
  const out = new Float64Array(steps);
  let j = 0;
  for (let i = 0; i < steps; i++) {
    const t = (i + 0.5) * stepMs;
    while (j + 1 < points.length && points[j + 1]!.atMs <= t) j++;
    out[i] = points[j]?.value ?? 0;
  }
  return out;
}

/** limitPoints returns a run's `floodgate_concurrency_limit` samples (the first such series), empty when the gateway has none. */
export function limitPoints(samples: readonly Sample[]): Array<{ atMs: number; value: number }> {
  const out: Array<{ atMs: number; value: number }> = [];
  for (const s of samples) {
    const key = Object.keys(s.metrics).find(
      (k) => k === 'floodgate_concurrency_limit' || k.startsWith('floodgate_concurrency_limit{'),
    );
    if (key !== undefined) out.push({ atMs: s.atMs, value: s.metrics[key]! });
  }
  return out;
}

/** timeChart returns a line chart over time of one value per lane, the upstream's slots (or capacity) in grey. */
export function timeChart(options: {
  id: string;
  title: string;
  yLabel: string;
  stepMs: number;
  lanes: ReadonlyArray<{ lane: LaneId; label: string; values: Float64Array }>;
  reference: { label: string; values: Float64Array };
}): string {
  const series: ChartSeries[] = options.lanes.map((l) => ({
    name: l.label,
    color: LANE_COLORS[l.lane],
    lines: [{ kind: 'value', values: l.values }],
  }));
  return renderLineChart({
    id: options.id,
    title: options.title,
    yLabel: options.yLabel,
    stepMs: options.stepMs,
    series,
    reference: options.reference,
  });
}
