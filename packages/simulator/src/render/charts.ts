import type { SimulationResult } from '../simulate.js';
import { colorOf } from './format.js';
import { renderLineChart } from './svg-chart.js';

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
  const stepMs = result.scenario.bucketMs;
  const perSecond = (values: Float64Array): Float64Array => values.map((v) => (v * 1000) / stepMs);
  const charts: Chart[] = [];
  const add = (id: string, title: string, svg: string): void => {
    charts.push({ id, title, svg });
  };
  add(
    'admitted',
    'Admitted and refused per second',
    renderLineChart({
      id: 'admitted',
      title: 'Admitted and refused per second',
      yLabel: 'cost per second',
      stepMs,
      reference: { label: 'offered', values: perSecond(result.offered) },
      notes: ['solid: admitted', 'dashed: refused'],
      series: result.lanes.map((lane, i) => ({
        name: lane.name,
        color: colorOf(i),
        lines: [
          { kind: 'admitted', values: perSecond(lane.series.admitted) },
          { kind: 'refused', values: perSecond(lane.series.refused), dash: '5 4' },
        ],
      })),
    }),
  );
  add(
    'wait',
    'Queue delay: longest wait of the requests arriving',
    renderLineChart({
      id: 'wait',
      title: 'Queue delay: longest wait of the requests arriving',
      yLabel: 'wait (ms)',
      stepMs,
      series: result.lanes.map((lane, i) => ({ name: lane.name, color: colorOf(i), lines: [{ kind: 'wait', values: lane.series.maxWaitMs }] })),
    }),
  );
  add(
    'window',
    'Rolling-window count on the hottest key, against the limit',
    renderLineChart({
      id: 'window',
      title: 'Rolling-window count on the hottest key, against the limit',
      yLabel: "admitted in the policy's window",
      stepMs,
      notes: ['solid: peak in the window', 'dashed: the limit'],
      series: result.lanes.map((lane, i) => ({ name: lane.name, color: colorOf(i), limit: lane.promise.limit, lines: [{ kind: 'window', values: lane.series.windowPeak }] })),
    }),
  );
  return charts;
}
