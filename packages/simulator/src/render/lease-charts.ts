import type { LeaseReport } from '../lease-report.js';
import type { LaneResult, SimulationResult } from '../simulate.js';
import { clipText, colorOf, escapeXml, formatNumber, niceTicks } from './format.js';
import { renderLineChart, type Chart, type ChartSeries } from './svg-chart.js';

const WIDTH = 940;
const HEIGHT = 380;
const PLOT = { left: 70, right: 700, top: 44, bottom: 320 };

/** A leased lane as the curve draws it. */
interface CurvePoint {
  readonly lane: LaneResult;
  readonly index: number;
  readonly nodes: number;
}

/**
 * leaseCharts returns the charts of a run's leased lanes: store operations per admitted request
 * against over-admission ({@link leaseCurveSvg}) when any lane leases, and, for each leased lane
 * where a node dies or the nodes' weights differ, its admissions per node over time.
 */
export function leaseCharts(result: SimulationResult): Chart[] {
  const points: CurvePoint[] = result.lanes.flatMap((lane, index) =>
    lane.leases === undefined ? [] : [{ lane, index, nodes: lane.leases.nodes.length }],
  );
  if (points.length === 0) return [];
  const title = 'Store operations per admitted request against over-admission';
  const charts: Chart[] = [{ id: 'leases', title, svg: leaseCurveSvg(points, title) }];
  for (const { lane, index } of points) {
    const spec = result.scenario.policies[index]!.distribution!;
    const uneven = spec.weights.some((w) => w !== spec.weights[0]);
    if (spec.deaths.length > 0 || uneven) charts.push(nodeChart(result, lane, index));
    if (spec.deaths.length > 0) charts.push(heldChart(result, lane, index));
  }
  return charts;
}

/**
 * The curve: each leased lane a filled point at (store operations per admitted request, log
 * scale; over-admission as % of the limit), joined to the lanes of as many nodes by a line in
 * order of their share, labelled with its share; its per-request peer a hollow point on the same
 * fleet; its stated bound a dashed line in its colour.
 */
function leaseCurveSvg(points: readonly CurvePoint[], title: string): string {
  const xs = points.flatMap(({ lane }) => [
    lane.leases!.storeOpsPerAdmitted,
    lane.leases!.perRequest.storeOpsPerAdmitted,
  ]);
  const lo = Math.floor(Math.log10(Math.max(1e-4, Math.min(...xs.filter((v) => v > 0)))));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...xs))));
  // The scale fits the points; a bound far above them is drawn at the top edge, its figure beside it.
  const yMax = Math.max(
    1,
    ...points.flatMap(({ lane }) => [lane.leases!.overPercent * 1.3, lane.leases!.perRequest.overPercent * 1.3]),
  );
  const yTicks = niceTicks(yMax);
  const yTop = yTicks[yTicks.length - 1]!;
  const x = (v: number): number =>
    PLOT.left + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (PLOT.right - PLOT.left);
  const y = (v: number): number => PLOT.bottom - (Math.min(Math.max(v, 0), yTop) / yTop) * (PLOT.bottom - PLOT.top);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${heightOf(points)}" viewBox="0 0 ${WIDTH} ${heightOf(points)}" role="img" aria-labelledby="leases-title" data-chart="leases" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<title id="leases-title">${escapeXml(title)}</title>`,
    `<rect class="background" x="0" y="0" width="${WIDTH}" height="${heightOf(points)}" fill="#ffffff"/>`,
    `<text class="chart-title" x="${PLOT.left}" y="24" font-size="15" font-weight="bold" fill="#222">${escapeXml(title)}</text>`,
    axes({ lo, hi, yTicks, x, y }),
  ];
  for (const group of byNodes(points)) parts.push(curveLine(group, x, y));
  for (const point of points) parts.push(pointGroup(point, x, y, yTop));
  parts.push(boundLabels(points, y, yTop));
  parts.push(legend(points), '</svg>');
  return parts.join('\n') + '\n';
}

function heightOf(points: readonly CurvePoint[]): number {
  return Math.max(HEIGHT, PLOT.top + (points.length + 5) * 20 + 16);
}

function axes(o: {
  lo: number;
  hi: number;
  yTicks: number[];
  x: (v: number) => number;
  y: (v: number) => number;
}): string {
  const parts = ['<g class="grid">'];
  for (const t of o.yTicks)
    parts.push(`<line x1="${PLOT.left}" x2="${PLOT.right}" y1="${c(o.y(t))}" y2="${c(o.y(t))}" stroke="#ececec"/>`);
  for (let e = o.lo; e <= o.hi; e++)
    parts.push(
      `<line x1="${c(o.x(10 ** e))}" x2="${c(o.x(10 ** e))}" y1="${PLOT.top}" y2="${PLOT.bottom}" stroke="#ececec"/>`,
    );
  parts.push('</g>', '<g class="axis x-axis">');
  parts.push(
    `<line class="domain" x1="${PLOT.left}" x2="${PLOT.right}" y1="${PLOT.bottom}" y2="${PLOT.bottom}" stroke="#333"/>`,
  );
  for (let e = o.lo; e <= o.hi; e++)
    parts.push(
      `<g class="tick"><line x1="${c(o.x(10 ** e))}" x2="${c(o.x(10 ** e))}" y1="${PLOT.bottom}" y2="${PLOT.bottom + 6}" stroke="#333"/><text x="${c(o.x(10 ** e))}" y="${PLOT.bottom + 20}" text-anchor="middle" fill="#333">${formatNumber(10 ** e, 4)}</text></g>`,
    );
  const middle = (PLOT.top + PLOT.bottom) / 2;
  parts.push(
    `<text class="axis-label" x="${(PLOT.left + PLOT.right) / 2}" y="${PLOT.bottom + 44}" text-anchor="middle" fill="#222">store operations per admitted request (log scale)</text>`,
    '</g>',
    '<g class="axis y-axis">',
    `<line class="domain" x1="${PLOT.left}" x2="${PLOT.left}" y1="${PLOT.top}" y2="${PLOT.bottom}" stroke="#333"/>`,
    ...o.yTicks.map(
      (t) =>
        `<g class="tick"><line x1="${PLOT.left - 6}" x2="${PLOT.left}" y1="${c(o.y(t))}" y2="${c(o.y(t))}" stroke="#333"/><text x="${PLOT.left - 9}" y="${c(o.y(t) + 4)}" text-anchor="end" fill="#333">${formatNumber(t)}%</text></g>`,
    ),
    `<text class="axis-label" x="16" y="${middle}" text-anchor="middle" fill="#222" transform="rotate(-90 16 ${middle})">over the exact answer, % of the limit</text>`,
    '</g>',
  );
  return parts.join('\n');
}

/** The leased lanes grouped by node count, each group in order of share: the curve of one fleet size. */
function byNodes(points: readonly CurvePoint[]): CurvePoint[][] {
  const groups = new Map<number, CurvePoint[]>();
  for (const p of points) groups.set(p.nodes, [...(groups.get(p.nodes) ?? []), p]);
  return [...groups.values()].map((g) =>
    [...g].sort((a, b) => a.lane.leases!.maxOutstandingShare - b.lane.leases!.maxOutstandingShare),
  );
}

function curveLine(group: readonly CurvePoint[], x: (v: number) => number, y: (v: number) => number): string {
  if (group.length < 2) return '';
  const d = group
    .map(
      (p, j) => `${j === 0 ? 'M' : 'L'}${c(x(p.lane.leases!.storeOpsPerAdmitted))} ${c(y(p.lane.leases!.overPercent))}`,
    )
    .join(' ');
  return `<path class="curve" data-nodes="${group[0]!.nodes}" d="${d}" fill="none" stroke="#888888" stroke-width="1.5"/>`;
}

function pointGroup(point: CurvePoint, x: (v: number) => number, y: (v: number) => number, yTop: number): string {
  const r = point.lane.leases!;
  const color = colorOf(point.index);
  const px = c(x(r.storeOpsPerAdmitted));
  const py = c(y(r.overPercent));
  const boundPercent = (r.boundUnits / point.lane.promise.limit) * 100;
  const bound = c(y(boundPercent));
  return [
    `<g class="series" data-name="${escapeXml(point.lane.name)}">`,
    // A bound above the scale has no line, only its figure at the top edge (boundLabels).
    boundPercent <= yTop
      ? `<line class="bound" x1="${PLOT.left}" x2="${PLOT.right}" y1="${bound}" y2="${bound}" stroke="${color}" stroke-width="1.5" stroke-dasharray="8 4" opacity="0.8"/>`
      : '',
    `<circle class="per-request" cx="${c(x(r.perRequest.storeOpsPerAdmitted))}" cy="${c(y(r.perRequest.overPercent))}" r="5" fill="#ffffff" stroke="${color}" stroke-width="2"/>`,
    `<circle class="leased" cx="${px}" cy="${py}" r="5" fill="${color}"/>`,
    `<text x="${c(x(r.storeOpsPerAdmitted) + 7)}" y="${c(y(r.overPercent) - 7)}" fill="${color}" font-size="11">${point.nodes} × ${formatNumber(r.maxOutstandingShare)}</text>`,
    '</g>',
  ].join('\n');
}

/** Each stated bound's figure at the right end of its line (at the top edge when above the scale), once per figure. */
function boundLabels(points: readonly CurvePoint[], y: (v: number) => number, yTop: number): string {
  const seen = new Set<string>();
  const labels: string[] = [];
  let above = 0;
  for (const { lane, index } of points) {
    const percent = (lane.leases!.boundUnits / lane.promise.limit) * 100;
    const text = `bound ${formatNumber(percent, 2)}%${percent > yTop ? ' ↑' : ''}`;
    if (seen.has(text)) continue;
    seen.add(text);
    const ly = percent > yTop ? PLOT.top + 10 + 13 * above++ : y(percent) - 4;
    labels.push(
      `<text class="bound-label" x="${PLOT.right - 4}" y="${c(ly)}" text-anchor="end" fill="${colorOf(index)}" stroke="#ffffff" stroke-width="3" paint-order="stroke">${text}</text>`,
    );
  }
  return `<g class="bounds">${labels.join('')}</g>`;
}

function legend(points: readonly CurvePoint[]): string {
  const left = PLOT.right + 20;
  const items = points.map(
    ({ lane, index }, i) =>
      `<g class="legend-item" data-name="${escapeXml(lane.name)}"><rect x="${left}" y="${PLOT.top + i * 20}" width="14" height="14" fill="${colorOf(index)}"/><text x="${left + 20}" y="${PLOT.top + i * 20 + 11}" fill="#222">${escapeXml(clipText(lane.name, 24))}</text></g>`,
  );
  const notes = [
    'filled: leases (nodes × share)',
    'hollow: per-request, same fleet',
    'dashed: stated bound (↑: above',
    '   the scale, figure at the top)',
    'grey line: same number of nodes',
  ];
  notes.forEach((note, j) =>
    items.push(
      `<text class="legend-note" x="${left}" y="${PLOT.top + (points.length + j) * 20 + 11}" fill="#555">${escapeXml(note)}</text>`,
    ),
  );
  return `<g class="legend">\n${items.join('\n')}\n</g>`;
}

/** Admitted per second by each node of a leased lane, with the fleet's total; deaths in the legend. */
function nodeChart(result: SimulationResult, lane: LaneResult, index: number): Chart {
  const stepMs = result.scenario.bucketMs;
  const r = lane.leases!;
  const perNode = r.nodes.map(() => new Float64Array(result.steps));
  const total = new Float64Array(result.steps);
  for (let i = 0; i < result.arrivals.length; i++) {
    const at = lane.admittedAtMs[i]!;
    if (Number.isNaN(at)) continue;
    const step = Math.min(result.steps - 1, Math.floor(at / stepMs));
    const perSecond = (result.arrivals.costs[i]! * 1000) / stepMs;
    perNode[lane.nodeOf?.[i] ?? i % r.nodes.length]![step]! += perSecond;
    total[step]! += perSecond;
  }
  const series: ChartSeries[] = perNode.map((values, node) => ({
    name: `node ${node}`,
    color: colorOf(node + 1),
    lines: [{ kind: 'admitted', values }],
  }));
  series.unshift({ name: 'all nodes', color: colorOf(0), lines: [{ kind: 'admitted', values: total }] });
  const notes = deathNotes(r);
  const id = `nodes-${index + 1}`;
  const title = `${lane.name}: admitted per second by node`;
  return { id, title, svg: renderLineChart({ id, title, stepMs, yLabel: 'cost per second', series, notes }) };
}

/** The units each node of a leased lane holds of the chart key, as the store's ledger counts them: a dead node's until its lease ends. */
function heldChart(result: SimulationResult, lane: LaneResult, index: number): Chart {
  const r = lane.leases!;
  const series: ChartSeries[] = r.heldAtStepEnd.map((values, node) => ({
    name: `node ${node}`,
    color: colorOf(node + 1),
    lines: [{ kind: 'held', values }],
  }));
  const notes = ['at the end of each step', `max out: ${r.maxOutstanding} units`, ...deathNotes(r)];
  const id = `held-${index + 1}`;
  const title = `${lane.name}: units each node holds on the store's ledger, key ${JSON.stringify(result.chartKey)}`;
  const stepMs = result.scenario.bucketMs;
  return { id, title, svg: renderLineChart({ id, title, stepMs, yLabel: 'units held', series, notes }) };
}

function deathNotes(r: LeaseReport): string[] {
  return r.nodes.flatMap((n, node) =>
    n.diedAtMs === undefined
      ? []
      : [
          `node ${node} died at ${formatNumber(n.diedAtMs / 1000)} s;`,
          ` its lease ends by ${formatNumber((n.diedAtMs + r.leaseMs) / 1000)} s`,
        ],
  );
}

function c(value: number): string {
  return formatNumber(value, 1);
}
