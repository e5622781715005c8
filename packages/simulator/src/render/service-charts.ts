import type { ServiceSimulationResult } from '../service/simulate-service.js';
import type { Chart } from './charts.js';
import { colorOf } from './format.js';
import { renderLineChart, type ChartSeries, type LineChartOptions } from './svg-chart.js';

/**
 * renderServiceCharts returns the charts of a service run, each lane in its own colour: the
 * concurrency limit (solid) and calls in flight (dashed) of each protected lane against the
 * service's slots (left out when no lane has a limit); each lane's goodput per second against the service's capacity; and, per tier
 * of the traffic, the p50 (solid) and p99 (dashed) latency of each lane's admitted calls.
 *
 * @example
 * for (const chart of renderServiceCharts(simulateService(scenario))) writeFileSync(`${chart.id}.svg`, chart.svg);
 */
export function renderServiceCharts(result: ServiceSimulationResult): Chart[] {
  const concurrency = concurrencyChart(result);
  return [...(concurrency === undefined ? [] : [concurrency]), goodputChart(result), ...latencyCharts(result)];
}

function chart(
  id: string,
  title: string,
  options: Omit<LineChartOptions, 'id' | 'title' | 'stepMs'>,
  result: ServiceSimulationResult,
): Chart {
  return { id, title, svg: renderLineChart({ id, title, stepMs: result.scenario.bucketMs, ...options }) };
}

/** The limit chart, when some lane has a limit. */
function concurrencyChart(result: ServiceSimulationResult): Chart | undefined {
  const series: ChartSeries[] = [];
  for (const [i, lane] of result.lanes.entries()) {
    if (lane.series.levels.limit.every(Number.isNaN)) continue;
    series.push({
      name: lane.name,
      color: colorOf(i),
      lines: [
        { kind: 'limit', values: lane.series.levels.limit },
        { kind: 'in-flight', values: lane.series.levels.inFlight, dash: '5 4' },
      ],
    });
  }
  if (series.length === 0) return undefined;
  const reference = { label: 'service slots', values: result.capacity.slots };
  const notes = ['solid: the limit', 'dashed: calls in flight', 'means over each step'];
  return chart(
    'concurrency',
    "Concurrency limit and calls in flight, against the service's slots",
    { yLabel: 'calls', series, reference, notes },
    result,
  );
}

function goodputChart(result: ServiceSimulationResult): Chart {
  const perSecond = (values: Float64Array): Float64Array => values.map((v) => (v * 1000) / result.scenario.bucketMs);
  const series = result.lanes.map((lane, i) => ({
    name: lane.name,
    color: colorOf(i),
    lines: [{ kind: 'goodput', values: perSecond(lane.series.goodput) }],
  }));
  const reference = { label: 'capacity', values: result.capacity.perSecond };
  const notes = ['answers within the timeout,', 'at the time of the answer'];
  return chart(
    'goodput',
    "Goodput per second, against the service's capacity",
    { yLabel: 'answers per second', series, reference, notes },
    result,
  );
}

function latencyCharts(result: ServiceSimulationResult): Chart[] {
  const tiers = result.scenario.service.tiers;
  return tiers.map((tier, t) => {
    const series = result.lanes.map((lane, i) => ({
      name: lane.name,
      color: colorOf(i),
      lines: [
        { kind: 'p50', values: lane.series.tiers[t]!.p50Ms },
        { kind: 'p99', values: lane.series.tiers[t]!.p99Ms, dash: '5 4' },
      ],
    }));
    const notes = ['solid: p50', 'dashed: p99', 'a timed-out call counts', 'as the timeout'];
    const id = tiers.length === 1 ? 'latency' : `latency-tier-${t}`;
    const title =
      tiers.length === 1
        ? 'Latency of the admitted calls'
        : `Latency of the admitted calls of tier ${t} (${tier.name})`;
    return chart(id, title, { yLabel: 'latency (ms)', series, notes }, result);
  });
}
