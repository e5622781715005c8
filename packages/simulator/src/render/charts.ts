import type { SimulationResult } from '../simulate.js';
import { colorOf } from './format.js';
import { renderLineChart, type LineChartOptions } from './svg-chart.js';

/** Chart is one rendered chart: a file-name-safe id, its title and its SVG document. */
export interface Chart {
  readonly id: string;
  readonly title: string;
  readonly svg: string;
}

/**
 * renderCharts returns the three charts of a run, each with one series per lane: admitted
 * (solid) and refused (dashed) per second against the offered load; the longest wait of the
 * requests arriving at each moment; and the hottest key's rolling-window count against each
 * lane's limit line.
 *
 * @example
 * for (const chart of renderCharts(await simulate(scenario))) writeFileSync(`${chart.id}.svg`, chart.svg);
 */
export function renderCharts(result: SimulationResult): Chart[] {
  return [admittedChart(result), waitChart(result), windowChart(result)];
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

function admittedChart(result: SimulationResult): Chart {
  const stepMs = result.scenario.bucketMs;
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    lines: [
      { kind: 'admitted', values: perSecond(lane.series.admitted, stepMs) },
      { kind: 'refused', values: perSecond(lane.series.refused, stepMs), dash: '5 4' },
    ],
  }));
  const reference = { label: 'offered', values: perSecond(result.offered, stepMs) };
  return chart(
    'admitted',
    'Admitted and refused per second',
    { yLabel: 'cost per second', series, reference, notes: ['solid: admitted', 'dashed: refused'] },
    result,
  );
}

function waitChart(result: SimulationResult): Chart {
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    lines: [{ kind: 'wait', values: lane.series.maxWaitMs }],
  }));
  return chart('wait', 'Queue delay: longest wait of the requests arriving', { yLabel: 'wait (ms)', series }, result);
}

function windowChart(result: SimulationResult): Chart {
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    limit: lane.promise.limit,
    lines: [{ kind: 'window', values: lane.series.windowPeak }],
  }));
  const notes = ['solid: peak in the window', 'dashed: the limit'];
  return chart(
    'window',
    'Rolling-window count on the hottest key, against the limit',
    { yLabel: "admitted in the policy's window", series, notes },
    result,
  );
}
