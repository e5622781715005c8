/** Small inline SVG charts over time, drawn on the server: they read without JavaScript and load nothing. */
import { esc } from './format.js';

/** ChartLine is one series of a {@link timeChart}: points as `[atMs, value]`, an undefined value breaking the line. */
export interface ChartLine {
  readonly name: string;
  readonly color: string;
  readonly points: readonly (readonly [number, number | undefined])[];
  readonly dashed?: boolean;
}

/** TimeChartOptions configures a {@link timeChart}. */
export interface TimeChartOptions {
  readonly lines: readonly ChartLine[];
  /** The time span drawn, in ms since the epoch: `fromMs` at the left edge, `toMs` ("now") at the right. */
  readonly fromMs: number;
  readonly toMs: number;
  /** The unit after the value axis's top figure (`''` for counts). */
  readonly unit: string;
  /** What the chart shows, for screen readers. */
  readonly label: string;
  readonly className: string;
  /** Points further apart than this, in ms, are not joined (default 2,500: a missed sample or two). */
  readonly gapMs?: number;
}

const WIDTH = 420;
const HEIGHT = 110;
const PAD = { left: 38, right: 8, top: 8, bottom: 16 } as const;
const TEXT = 'font-size="10" fill="#5f6b76" font-family="system-ui, sans-serif"';

/**
 * timeChart returns an SVG of `lines` over time, the value axis from 0 to a round figure at or
 * above the highest value (at least 1), marked at 0, half and the top, and the time axis marked
 * at its start, middle and "now".
 */
export function timeChart(options: TimeChartOptions): string {
  const values = options.lines.flatMap((l) =>
    l.points.map((p) => p[1]).filter((v): v is number => v !== undefined && Number.isFinite(v)),
  );
  const top = roundUp(Math.max(1, ...values));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const spanMs = Math.max(1, options.toMs - options.fromMs);
  const x = (atMs: number): number => PAD.left + ((atMs - options.fromMs) / spanMs) * plotW;
  const y = (v: number): number => PAD.top + plotH - (Math.min(v, top) / top) * plotH;
  const grid = [0, 0.5, 1].map((f) => {
    const gy = y(top * f).toFixed(1);
    return `<line x1="${PAD.left}" y1="${gy}" x2="${WIDTH - PAD.right}" y2="${gy}" stroke="#dde3e8"/><text x="${PAD.left - 4}" y="${gy}" dy="3" text-anchor="end" ${TEXT}>${axisFigure(top * f)}${f === 1 ? esc(options.unit) : ''}</text>`;
  });
  const spanS = Math.round(spanMs / 1000);
  const ticks = [
    `<text x="${PAD.left}" y="${HEIGHT - 3}" ${TEXT}>−${spanS} s</text>`,
    `<text x="${(PAD.left + plotW / 2).toFixed(1)}" y="${HEIGHT - 3}" text-anchor="middle" ${TEXT}>−${Math.round(spanS / 2)} s</text>`,
    `<text x="${WIDTH - PAD.right}" y="${HEIGHT - 3}" text-anchor="end" ${TEXT}>now</text>`,
  ];
  const paths = options.lines.map((line) => {
    const d = pathOf(line.points, x, y, options.gapMs ?? 2_500);
    return d === ''
      ? ''
      : `<path class="line-${esc(line.name)}" d="${d}" fill="none" stroke="${line.color}" stroke-width="1.75" stroke-linejoin="round"${line.dashed === true ? ' stroke-dasharray="4 3"' : ''}/>`;
  });
  return `<svg class="chart ${esc(options.className)}" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${esc(options.label)}">${grid.join('')}${ticks.join('')}${paths.join('')}</svg>`;
}

/** legendItem returns a legend entry: a short stroke in the line's colour and its text (already escaped). */
export function legendItem(line: Pick<ChartLine, 'color' | 'dashed'>, html: string): string {
  return `<span class="legend-item"><svg width="18" height="8" aria-hidden="true"><line x1="0" y1="4" x2="18" y2="4" stroke="${line.color}" stroke-width="2"${line.dashed === true ? ' stroke-dasharray="4 3"' : ''}/></svg> ${html}</span>`;
}

/** The path of points in time order: a new segment where a value is missing or the gap is too long; a lone point gets a short tick so that it shows. */
function pathOf(
  points: ChartLine['points'],
  x: (atMs: number) => number,
  y: (v: number) => number,
  gapMs: number,
): string {
  const segments: string[][] = [];
  let previousMs: number | undefined;
  for (const [atMs, v] of points) {
    if (v === undefined || !Number.isFinite(v)) {
      previousMs = undefined;
      continue;
    }
    if (previousMs === undefined || atMs - previousMs > gapMs) segments.push([]);
    segments.at(-1)!.push(`${x(atMs).toFixed(1)} ${y(v).toFixed(1)}`);
    previousMs = atMs;
  }
  return segments.map((points) => `M${points.join('L')}${points.length === 1 ? 'h2' : ''}`).join('');
}

/** roundUp returns the least of 1, 2 or 5 times a power of ten at or above `v`. */
export function roundUp(v: number): number {
  const power = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 5, 10]) if (step * power >= v) return step * power;
  return 10 * power;
}

function axisFigure(v: number): string {
  return v >= 10 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}
