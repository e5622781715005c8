import type { SimulationResult } from '../simulate.js';
import { renderCharts, type Chart } from './charts.js';
import { colorOf, escapeXml, formatNumber } from './format.js';
import { LEASE_HEADERS, LEASE_NOTES, leaseDeathLines, leaseRows } from './lease-summary.js';
import { SCORE_NOTES, SUMMARY_HEADERS, summaryRows } from './summary.js';

const STYLE = `
body { font-family: Helvetica, Arial, sans-serif; margin: 2rem auto; max-width: 960px; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
p.lead { color: #555; margin-top: 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.35rem 0.5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
td.bad { color: #b00020; font-weight: bold; }
span.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.4rem; vertical-align: -0.1rem; }
figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
ul.lanes, ul.notes { font-size: 0.9rem; }
pre { background: #f7f7f7; padding: 0.8rem; overflow-x: auto; font-size: 0.8rem; }
`;

/**
 * renderHtmlReport returns a self-contained HTML page for a run: the summary table, the charts
 * as inline SVG, each lane's policy and promise, and the scenario. It loads nothing (no external
 * URL, no script), so it reads offline and without JavaScript. Same result, same bytes.
 *
 * @example
 * writeFileSync('report.html', renderHtmlReport(await simulate(scenario)));
 */
export function renderHtmlReport(result: SimulationResult, charts: readonly Chart[] = renderCharts(result)): string {
  const sc = result.scenario;
  return htmlPage('floodgate simulation', [
    `<p class="lead">${result.arrivals.length} requests on ${result.arrivals.keys.length} key(s) over ${formatNumber(sc.durationMs)} ms of virtual time, seed ${sc.seed}; every lane runs floodgate's own code on a manual clock.</p>`,
    summaryTable(result),
    `<ul class="notes">\n${SCORE_NOTES.map((n) => `<li>${escapeXml(n)}</li>`).join('\n')}\n</ul>`,
    ...leaseTable(result),
    lanesList(result),
    ...chartFigures(charts),
    ...scenarioSection(sc),
  ]);
}

/** htmlPage returns a whole self-contained page titled `title` around the `body` parts, one per line. */
export function htmlPage(title: string, body: readonly string[]): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeXml(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    `<h1>${escapeXml(title)}</h1>`,
    ...body,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** chartFigures returns each chart under its title, inline. */
export function chartFigures(charts: readonly Chart[]): string[] {
  return charts.map((c) => `<h2>${escapeXml(c.title)}</h2>\n<figure id="chart-${c.id}">\n${c.svg}</figure>`);
}

/** scenarioSection returns the scenario as checked, printed in full (trace rows counted, infinities as strings). */
export function scenarioSection(scenario: unknown): string[] {
  return ['<h2>Scenario</h2>', `<pre>${escapeXml(JSON.stringify(scenario, scenarioReplacer, 2))}</pre>`];
}

function summaryTable(result: SimulationResult): string {
  const head = `<tr>${SUMMARY_HEADERS.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const rows = summaryRows(result).map((cells, i) => {
    const score = result.lanes[i]!.score;
    const tds = cells.map((cell, c) => {
      const bad =
        (c === 4 && score.overPromise > 0) ||
        (c === 5 && score.overLimit > 0) ||
        (c === 6 && (score.wronglyRefused ?? 0) > 0);
      const content =
        c === 0 ? `<span class="swatch" style="background:${colorOf(i)}"></span>${escapeXml(cell)}` : escapeXml(cell);
      return `<td${bad ? ' class="bad"' : ''}>${content}</td>`;
    });
    return `<tr>${tds.join('')}</tr>`;
  });
  return `<table class="summary">\n<thead>${head}</thead>\n<tbody>\n${rows.join('\n')}\n</tbody>\n</table>`;
}

/** The leased lanes' table, their deaths and what the columns mean; nothing when no lane leases. */
function leaseTable(result: SimulationResult): string[] {
  const rows = leaseRows(result);
  if (rows.length === 0) return [];
  const head = `<tr>${LEASE_HEADERS.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const body = rows.map((cells) => `<tr>${cells.map((c) => `<td>${escapeXml(c)}</td>`).join('')}</tr>`);
  const notes = [...leaseDeathLines(result), ...LEASE_NOTES].map((n) => `<li>${escapeXml(n)}</li>`);
  return [
    '<h2>Leases</h2>',
    `<table class="leases">\n<thead>${head}</thead>\n<tbody>\n${body.join('\n')}\n</tbody>\n</table>`,
    `<ul class="notes">\n${notes.join('\n')}\n</ul>`,
  ];
}

function lanesList(result: SimulationResult): string {
  const items = result.lanes.map((lane) => {
    const p = lane.promise;
    const guaranteed = p.guaranteed === undefined ? '' : `, never refuses below ${formatNumber(p.guaranteed)}`;
    return `<li><strong>${escapeXml(lane.name)}</strong>: ${escapeXml(lane.description)}. Promise: at most ${formatNumber(p.maxAdmitted)} in any ${formatNumber(p.windowMs)} ms${guaranteed}.</li>`;
  });
  return `<ul class="lanes">\n${items.join('\n')}\n</ul>`;
}

/** Writes infinities as strings and trace rows as their count, so the scenario prints in full and short. */
function scenarioReplacer(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (key === 'rows' && Array.isArray(value)) return `${value.length} rows`;
  return value;
}
