import type { TrafficSpec } from '../scenario.js';
import type { SimulationResult } from '../simulate.js';
import { formatNumber } from './format.js';
import { LEASE_HEADERS, LEASE_NOTES, leaseDeathLines, leaseRows } from './lease-summary.js';

/** summaryRows returns one row of text cells per lane, under {@link SUMMARY_HEADERS}. */
export function summaryRows(result: SimulationResult): string[][] {
  return result.lanes.map((lane) => {
    const s = lane.score;
    const w = s.waitMs;
    return [
      lane.name,
      String(s.admitted),
      String(s.refused),
      `${formatNumber(s.maxInWindow)} / ${formatNumber(lane.promise.limit)} / ${formatNumber(lane.promise.maxAdmitted)}`,
      formatNumber(s.overPromise),
      formatNumber(s.overLimit),
      s.wronglyRefused === undefined ? 'n/a' : String(s.wronglyRefused),
      `${formatNumber(w.p50)} / ${formatNumber(w.p90)} / ${formatNumber(w.p99)} / ${formatNumber(w.max)}`,
    ];
  });
}

/** SUMMARY_HEADERS are the column titles of {@link summaryRows}. */
export const SUMMARY_HEADERS = [
  'lane',
  'admitted',
  'refused',
  'max in window / limit / promise',
  'over own promise',
  'over limit (sliding)',
  'wrongly refused',
  'wait ms p50 / p90 / p99 / max',
] as const;

/** SCORE_NOTES say what the score columns measure, under every summary. */
export const SCORE_NOTES = [
  "max in window: the most admitted on one key in any sliding window of the lane's length.",
  'over own promise: admitted beyond what the policy promises (a fixed window promises up to 2x its limit).',
  'over limit (sliding): admitted beyond the nominal limit in any sliding window of that length.',
  'wrongly refused: refused while the window held less than the policy guarantees.',
] as const;

/**
 * renderTextSummary returns a plain-text table of every lane's score, with the scenario's
 * headline figures and each lane's policy underneath. Same result, same text.
 *
 * @example
 * process.stdout.write(renderTextSummary(await simulate(scenario)));
 */
export function renderTextSummary(result: SimulationResult): string {
  const sc = result.scenario;
  const out = [
    `floodgate simulation: ${result.arrivals.length} requests over ${formatNumber(sc.durationMs)} ms, seed ${sc.seed}, ${result.arrivals.keys.length} key(s)`,
    '',
    ...textTable([[...SUMMARY_HEADERS], ...summaryRows(result)]),
    '',
    ...result.lanes.map(
      (lane) =>
        `${lane.name}: ${lane.description}; window ${formatNumber(lane.promise.windowMs)} ms; hottest key ${JSON.stringify(lane.score.hottestKey)}`,
    ),
    '',
    ...SCORE_NOTES,
    ...leaseSection(result),
  ];
  return out.join('\n') + '\n';
}

/** The lease table, its deaths and notes, after a blank line; nothing when no lane leases. */
function leaseSection(result: SimulationResult): string[] {
  const rows = leaseRows(result);
  if (rows.length === 0) return [];
  const deaths = leaseDeathLines(result);
  return [
    '',
    ...textTable([[...LEASE_HEADERS], ...rows]),
    ...(deaths.length > 0 ? ['', ...deaths] : []),
    '',
    ...LEASE_NOTES,
  ];
}

/** textTable returns `rows` (the first the headers) as aligned lines: the first column to the left, the others to the right. */
export function textTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    r
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * summaryJson returns the run's summary as plain data: the scenario (trace rows counted, not
 * copied) and each lane's promise and score, numbers rounded to 3 decimals and infinities written
 * as strings, so that `JSON.stringify` of it is stable.
 */
export function summaryJson(result: SimulationResult): unknown {
  const scenario = {
    ...result.scenario,
    traffic: trafficForJson(result.scenario.traffic),
  };
  return cleanForJson({
    scenario,
    requests: result.arrivals.length,
    keys: result.arrivals.keys.length,
    lanes: result.lanes.map((lane) => ({
      name: lane.name,
      description: lane.description,
      promise: lane.promise,
      score: lane.score,
      leases: lane.leases === undefined ? undefined : { ...lane.leases, heldAtStepEnd: undefined },
    })),
  });
}

/** trafficForJson returns the traffic sources with each trace's rows counted, not copied. */
export function trafficForJson(traffic: readonly TrafficSpec[]): unknown[] {
  return traffic.map((t) =>
    t.type === 'trace' ? { type: 'trace', file: t.file, format: t.format, rows: t.rows.length } : t,
  );
}

/** renderJsonSummary returns {@link summaryJson} as indented JSON text ending in a newline. */
export function renderJsonSummary(result: SimulationResult): string {
  return JSON.stringify(summaryJson(result), null, 2) + '\n';
}

/** cleanForJson returns `value` with numbers rounded to 3 decimals, infinities and NaN as strings, and undefined fields left out: stable JSON. */
export function cleanForJson(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? Number(formatNumber(value)) : formatNumber(value);
  if (Array.isArray(value)) return value.map(cleanForJson);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = cleanForJson(v);
    return out;
  }
  return value;
}
