import type { ServiceSimulationResult } from '../service/simulate-service.js';
import type { Chart } from './charts.js';
import { colorOf, escapeXml, formatNumber } from './format.js';
import { chartFigures, htmlPage, scenarioSection } from './html-report.js';
import { renderServiceCharts } from './service-charts.js';
import {
  LANE_HEADERS,
  TIER_HEADERS,
  describeService,
  laneRows,
  phaseHeaders,
  phaseRows,
  tierRows,
} from './service-summary.js';

/**
 * renderServiceHtmlReport returns a self-contained HTML page for a service run: the lanes'
 * outcomes, goodput per phase against capacity, each tier's success and latency, the charts as
 * inline SVG, and the scenario. It loads nothing (no external URL, no script). Same result, same
 * bytes.
 *
 * @example
 * writeFileSync('report.html', renderServiceHtmlReport(simulateService(scenario)));
 */
export function renderServiceHtmlReport(
  result: ServiceSimulationResult,
  charts: readonly Chart[] = renderServiceCharts(result),
): string {
  const sc = result.scenario;
  const laneColors = result.lanes.map((_, i) => colorOf(i));
  return htmlPage('floodgate service simulation', [
    `<p class="lead">${result.arrivals.length} requests over ${formatNumber(sc.durationMs)} ms of virtual time, seed ${sc.seed}, through ${result.lanes.length} lanes into identical copies of one service; every limiter is floodgate's own ConcurrencyLimiter on a manual clock.</p>`,
    `<p>Service: ${escapeXml(describeService(sc.service))}.</p>`,
    table([...LANE_HEADERS], laneRows(result), laneColors),
    '<h2>Goodput per phase</h2>',
    table(phaseHeaders(result), phaseRows(result)),
    '<h2>Tiers</h2>',
    table([...TIER_HEADERS], tierRows(result)),
    `<ul class="lanes">\n${result.lanes.map((lane) => `<li><strong>${escapeXml(lane.name)}</strong>: ${escapeXml(lane.description)}.</li>`).join('\n')}\n</ul>`,
    ...chartFigures(charts),
    ...scenarioSection(sc),
  ]);
}

/** A table of text cells; with `swatches`, each row's first cell carries that colour's swatch. */
function table(headers: readonly string[], rows: readonly string[][], swatches?: readonly string[]): string {
  const head = `<tr>${headers.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const body = rows.map((cells, r) => {
    const tds = cells.map((cell, c) => {
      const swatch =
        c === 0 && swatches !== undefined ? `<span class="swatch" style="background:${swatches[r]}"></span>` : '';
      return `<td>${swatch}${escapeXml(cell)}</td>`;
    });
    return `<tr>${tds.join('')}</tr>`;
  });
  return `<table class="summary">\n<thead>${head}</thead>\n<tbody>\n${body.join('\n')}\n</tbody>\n</table>`;
}
