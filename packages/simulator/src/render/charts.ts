import type { LaneResult, SimulationResult } from '../simulate.js';
import { colorOf, formatNumber } from './format.js';
import { leaseCharts } from './lease-charts.js';
import { spacingChart } from './spacing-chart.js';
import { renderLineChart, type Chart, type ChartSeries, type LineChartOptions } from './svg-chart.js';

export type { Chart } from './svg-chart.js';

/**
 * renderCharts returns the charts of a run, one series per lane in each: admitted (solid),
 * refused (dashed) and waited (dotted, when any lane waits) per second against the offered load;
 * per lane, its algorithm's state over time on the chart key (tokens left, water in a leaky
 * bucket, a window's count, GCRA's theoretical arrival time ahead of now, requests queued)
 * against its bound; the wait percentiles of the lanes that wait (no chart when none does); and
 * the chart key's rolling-window count against each lane's nominal limit (dotted) and what the
 * policy promises (dashed: twice the limit for a fixed window); and, when a lane is a smooth
 * limiter, the spacing between its consecutive admissions against 1 / rate ({@link spacingChart});
 * and, when a lane leases, store operations per admitted request against over-admission and a
 * leased fleet's admissions per node ({@link leaseCharts}).
 *
 * @example
 * for (const chart of renderCharts(await simulate(scenario))) writeFileSync(`${chart.id}.svg`, chart.svg);
 */
export function renderCharts(result: SimulationResult): Chart[] {
  const wait = waitChart(result);
  const spacing = spacingChart(result);
  return [
    admittedChart(result),
    ...result.lanes.map((lane, i) => stateChart(result, lane, i)),
    ...(wait === undefined ? [] : [wait]),
    windowChart(result),
    ...(spacing === undefined ? [] : [spacing]),
    ...leaseCharts(result),
  ];
}

function chart(
  id: string,
  title: string,
  options: Omit<LineChartOptions, 'id' | 'title' | 'stepMs'>,
  result: SimulationResult,
): Chart {
  return { id, title, svg: renderLineChart({ id, title, stepMs: result.scenario.bucketMs, ...options }) };
}

function perSecond(values: Float64Array, stepMs: number): Float64Array {
  return values.map((v) => (v * 1000) / stepMs);
}

/** Whether any admitted request of the lane waited. */
function waits(lane: LaneResult): boolean {
  return lane.score.waitMs.max > 0;
}

function admittedChart(result: SimulationResult): Chart {
  const stepMs = result.scenario.bucketMs;
  const anyWait = result.lanes.some(waits);
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    lines: [
      { kind: 'admitted', values: perSecond(lane.series.admitted, stepMs) },
      { kind: 'refused', values: perSecond(lane.series.refused, stepMs), dash: '5 4' },
      ...(anyWait ? [{ kind: 'waited', values: perSecond(lane.series.waited, stepMs), dash: '1 3' }] : []),
    ],
  }));
  const reference = { label: 'offered', values: perSecond(result.offered, stepMs) };
  const notes = ['solid: admitted', 'dashed: refused', ...(anyWait ? ['dotted: admitted after a wait'] : [])];
  return chart(
    'admitted',
    'Admitted, refused and waited per second',
    { yLabel: 'cost per second', series, reference, notes },
    result,
  );
}

function stateChart(result: SimulationResult, lane: LaneResult, index: number): Chart {
  const reading = lane.reading;
  const marks = Number.isFinite(reading.bound) ? [{ kind: 'bound', value: reading.bound, dash: '8 4' }] : [];
  const series: ChartSeries[] = [
    { name: lane.name, color: colorOf(index), lines: [{ kind: 'state', values: lane.series.state }], marks },
  ];
  const notes = [
    reading.fuller === 1 ? 'solid: fullest in each step' : 'solid: emptiest in each step',
    ...(marks.length > 0 ? [`dashed: ${reading.boundLabel} ${formatNumber(reading.bound)}`] : []),
  ];
  return chart(
    `state-${index + 1}`,
    `${lane.name}: ${reading.label}, key ${JSON.stringify(result.chartKey)}`,
    { yLabel: reading.label, series, notes },
    result,
  );
}

function waitChart(result: SimulationResult): Chart | undefined {
  const series = result.lanes.flatMap((lane, i) =>
    waits(lane)
      ? [
          {
            name: lane.name,
            color: colorOf(i),
            lines: [
              { kind: 'wait-p50', values: lane.series.waitP50Ms },
              { kind: 'wait-p99', values: lane.series.waitP99Ms, dash: '5 4' },
            ],
          },
        ]
      : [],
  );
  if (series.length === 0) return undefined;
  return chart(
    'wait',
    'Wait of the admitted requests, by when they arrived',
    { yLabel: 'wait (ms)', series, notes: ['solid: p50', 'dashed: p99', 'lanes that never wait: not drawn'] },
    result,
  );
}

function windowChart(result: SimulationResult): Chart {
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    lines: [{ kind: 'window', values: lane.series.windowPeak }],
    marks: [
      { kind: 'limit', value: lane.promise.limit, dash: '2 3' },
      ...(lane.promise.maxAdmitted === lane.promise.limit
        ? []
        : [{ kind: 'promise', value: lane.promise.maxAdmitted, dash: '8 4' }]),
    ],
  }));
  const notes = ['solid: most in a window', 'dotted: nominal limit', 'dashed: promised at most'];
  const windows = [...new Set(result.lanes.map((lane) => lane.promise.windowMs))];
  if (windows.length > 1)
    notes.push(
      'window lengths differ:',
      ...result.lanes.map((lane) => ` ${lane.name.slice(0, 14)}: ${formatNumber(lane.promise.windowMs)} ms`),
    );
  return chart(
    'window',
    `Most admitted in any window on key ${JSON.stringify(result.chartKey)}, against limit and promise`,
    { yLabel: "admitted in the lane's window", series, notes },
    result,
  );
}
