import type { SimulationResult } from '../simulate.js';
import { formatNumber } from './format.js';

/** summaryRows returns one row of text cells per lane, under {@link SUMMARY_HEADERS}. */
export function summaryRows(result: SimulationResult): string[][] {
  return result.lanes.map((lane) => {
    const s = lane.score;
    const w = s.waitMs;
    return [
      lane.name,
      String(s.admitted),
      String(s.refused),
      `${formatNumber(s.maxInWindow)} / ${formatNumber(lane.promise.maxAdmitted)}`,
      formatNumber(s.overAdmitted),
      s.wronglyRefused === undefined ? 'n/a' : String(s.wronglyRefused),
      `${formatNumber(w.p50)} / ${formatNumber(w.p90)} / ${formatNumber(w.p99)} / ${formatNumber(w.max)}`,
    ];
  });
}

/** SUMMARY_HEADERS are the column titles of {@link summaryRows}. */
export const SUMMARY_HEADERS = ['lane', 'admitted', 'refused', 'max in window / promised', 'over-admitted', 'wrongly refused', 'wait ms p50 / p90 / p99 / max'] as const;

/**
 * renderTextSummary returns a plain-text table of every lane's score, with the scenario's
 * headline figures and each lane's policy underneath. Same result, same text.
 *
 * @example
 * process.stdout.write(renderTextSummary(await simulate(scenario)));
 */
export function renderTextSummary(result: SimulationResult): string {
  const rows = [[...SUMMARY_HEADERS], ...summaryRows(result)];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]): string => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ').trimEnd();
  const sc = result.scenario;
  const out = [
    `floodgate simulation: ${result.arrivals.length} requests over ${formatNumber(sc.durationMs)} ms, seed ${sc.seed}, ${result.arrivals.keys.length} key(s)`,
    '',
    line(rows[0]!),
    ...rows.slice(1).map(line),
    '',
    ...result.lanes.map((lane) => `${lane.name}: ${lane.description}; window ${formatNumber(lane.promise.windowMs)} ms; hottest key ${JSON.stringify(lane.score.hottestKey)}`),
  ];
  return out.join('\n') + '\n';
}

/**
 * summaryJson returns the run's summary as plain data: the scenario (trace rows counted, not
 * copied) and each lane's promise and score, numbers rounded to 3 decimals and infinities written
 * as strings, so that `JSON.stringify` of it is stable.
 */
export function summaryJson(result: SimulationResult): unknown {
  const scenario = {
    ...result.scenario,
    traffic: result.scenario.traffic.map((t) => (t.type === 'trace' ? { type: 'trace', file: t.file, format: t.format, rows: t.rows.length } : t)),
  };
  return clean({
    scenario,
    requests: result.arrivals.length,
    keys: result.arrivals.keys.length,
    lanes: result.lanes.map((lane) => ({ name: lane.name, description: lane.description, promise: lane.promise, score: lane.score })),
  });
}

/** renderJsonSummary returns {@link summaryJson} as indented JSON text ending in a newline. */
export function renderJsonSummary(result: SimulationResult): string {
  return JSON.stringify(summaryJson(result), null, 2) + '\n';
}

function clean(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? Number(formatNumber(value)) : formatNumber(value);
  if (Array.isArray(value)) return value.map(clean);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = clean(v);
    return out;
  }
  return value;
}
