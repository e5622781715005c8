import type { SimulationResult } from '../simulate.js';
import { colorOf, formatNumber } from './format.js';
import { renderLineChart, type Chart, type ChartSeries } from './svg-chart.js';

/** Each step's gaps are those of the last this many intervals (or the step, if longer). */
const WINDOW_INTERVALS = 5;

/**
 * spacingChart returns the chart of the spacing between consecutive admissions on the chart key,
 * for each lane whose policy is a smooth limiter, against its 1 / rate (dashed): at each step, the
 * closest two consecutive admissions came (solid) and the median gap (dotted), over the gaps whose
 * later admission fell in the step or, if longer, the last 5 intervals up to its end. A smooth limiter's admissions are 1 / rate apart while it
 * is busy; stored permits (a burst) show as gaps near 0, a warming-up limiter's cold spacing as
 * gaps above 1 / rate, and a fleet's round-trip jitter as gaps on both sides. Undefined when no
 * lane is a smooth limiter.
 */
export function spacingChart(result: SimulationResult): Chart | undefined {
  const { arrivals, scenario, steps } = result;
  const stepMs = scenario.bucketMs;
  const keyId = arrivals.keys.indexOf(result.chartKey);
  const series: ChartSeries[] = [];
  const closestNotes: string[] = [];
  result.lanes.forEach((lane, index) => {
    const policy = scenario.policies[index]!.policy;
    if (policy.type !== 'smooth-bursty' && policy.type !== 'smooth-warming-up') return;
    const starts: number[] = [];
    for (let i = 0; i < arrivals.length; i++) {
      const at = lane.admittedAtMs[i]!;
      if (arrivals.keyIds[i] === keyId && !Number.isNaN(at)) starts.push(at);
    }
    starts.sort((a, b) => a - b);
    const intervalMs = 1000 / policy.permitsPerSecond;
    const windowMs = Math.max(stepMs, WINDOW_INTERVALS * intervalMs);
    const { closest, median, overall } = gapsByStep(starts, { stepMs, steps, windowMs });
    series.push({
      name: lane.name,
      color: colorOf(index),
      lines: [
        { kind: 'closest', values: closest },
        { kind: 'median', values: median, dash: '1 3' },
      ],
      marks: [{ kind: 'interval', value: intervalMs, dash: '8 4' }],
    });
    if (Number.isFinite(overall)) closestNotes.push(` ${lane.name.slice(0, 14)}: ${formatNumber(overall)} ms`);
  });
  if (series.length === 0) return undefined;
  const id = 'spacing';
  const title = `Spacing of consecutive admissions on key ${JSON.stringify(result.chartKey)}, against 1 / rate`;
  const notes = [
    'solid: closest gap',
    'dotted: median gap',
    `(gaps ending in the step, or in`,
    ` the last ${WINDOW_INTERVALS} intervals if longer)`,
    'dashed: 1 / rate',
    'closest of all:',
    ...closestNotes,
  ];
  return { id, title, svg: renderLineChart({ id, title, stepMs, yLabel: 'ms between admissions', series, notes }) };
}

/**
 * The closest and median gap between consecutive `starts` (sorted, ms) whose later start falls in
 * the `windowMs` up to each step's end, and the closest of all. A window of several intervals
 * keeps a line unbroken where a step is shorter than the gaps it would show.
 */
function gapsByStep(
  starts: readonly number[],
  options: { stepMs: number; steps: number; windowMs: number },
): { closest: Float64Array; median: Float64Array; overall: number } {
  const { stepMs, steps, windowMs } = options;
  const closest = new Float64Array(steps).fill(NaN);
  const median = new Float64Array(steps).fill(NaN);
  let overall = Infinity;
  for (let i = 1; i < starts.length; i++) overall = Math.min(overall, starts[i]! - starts[i - 1]!);
  let first = 1;
  let end = 1;
  for (let step = 0; step < steps; step++) {
    const endMs = step === steps - 1 ? Infinity : (step + 1) * stepMs;
    while (end < starts.length && starts[end]! < endMs) end++;
    while (first < end && starts[first]! < endMs - windowMs) first++;
    if (first >= end) continue;
    const gaps: number[] = [];
    for (let i = first; i < end; i++) gaps.push(starts[i]! - starts[i - 1]!);
    gaps.sort((a, b) => a - b);
    closest[step] = gaps[0]!;
    median[step] = gaps[Math.floor((gaps.length - 1) / 2)]!;
  }
  return { closest, median, overall };
}
