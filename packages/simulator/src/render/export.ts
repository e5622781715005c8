import type { SimulationResult } from '../simulate.js';
import { formatNumber } from './format.js';

/** ExportFormat is the layout of a decisions export: comma-separated values or JSON lines. */
export type ExportFormat = 'csv' | 'jsonl';

/** EXPORT_COLUMNS are the fields of every exported decision, in order (the CSV header). */
export const EXPORT_COLUMNS = [
  'lane',
  'atMs',
  'key',
  'node',
  'cost',
  'decision',
  'waitMs',
  'stateAfter',
  'state',
] as const;

/** How many decisions go into one chunk of text. */
const CHUNK_ROWS = 20_000;

/**
 * exportDecisions yields every decision of a run as text, in chunks to be written one after the
 * other: for each lane, each request in arrival order with its lane, arrival time (ms), key, the
 * node that decided it (0-based; request i goes to node `i % nodes` unless a leased fleet's
 * weights or deaths moved it), cost, `admitted` or `refused`, its wait in ms (empty or null when refused), the key's state right after the
 * decision (empty or null when there is none to read, or when the run did not keep states: run
 * `simulate` with `keepStates`) and what that state is (`tokens left`).
 * CSV starts with a header line and quotes a field holding a comma, quote or line break. Numbers
 * are rounded to 3 decimals, as in the summaries; the same run gives the same bytes.
 *
 * @example
 * for (const chunk of exportDecisions(await simulate(scenario), 'csv')) out.write(chunk);
 */
export function* exportDecisions(result: SimulationResult, format: ExportFormat): Generator<string> {
  if (format === 'csv') yield `${EXPORT_COLUMNS.join(',')}\n`;
  const { arrivals } = result;
  const keys = arrivals.keys.map((k) => (format === 'csv' ? csvField(k) : JSON.stringify(k)));
  for (const lane of result.lanes) {
    const name = format === 'csv' ? csvField(lane.name) : JSON.stringify(lane.name);
    const state = format === 'csv' ? csvField(lane.reading.label) : JSON.stringify(lane.reading.label);
    let lines: string[] = [];
    for (let i = 0; i < arrivals.length; i++) {
      const at = arrivals.atMs[i]!;
      const admittedAtMs = lane.admittedAtMs[i]!;
      const admitted = admittedAtMs === admittedAtMs;
      const after = lane.stateAfter?.[i] ?? NaN;
      const fields = [
        name,
        formatNumber(at),
        keys[arrivals.keyIds[i]!]!,
        String(lane.nodeOf === undefined ? i % lane.nodes : lane.nodeOf[i]!),
        formatNumber(arrivals.costs[i]!),
        admitted ? 'admitted' : 'refused',
        admitted ? formatNumber(admittedAtMs - at) : undefined,
        after === after ? formatNumber(after) : undefined,
        state,
      ];
      lines.push(format === 'csv' ? csvRow(fields) : jsonRow(fields));
      if (lines.length === CHUNK_ROWS) {
        yield lines.join('');
        lines = [];
      }
    }
    if (lines.length > 0) yield lines.join('');
  }
}

/** exportFormatOf returns the format a file name asks for: `.csv`, or `.jsonl` / `.ndjson`; undefined otherwise. */
export function exportFormatOf(file: string): ExportFormat | undefined {
  if (/\.csv$/i.test(file)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl';
  return undefined;
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvRow(fields: ReadonlyArray<string | undefined>): string {
  return `${fields.map((f) => f ?? '').join(',')}\n`;
}

/** Fields already encoded: strings as JSON, numbers as text, `decision` bare (quoted here). */
function jsonRow(fields: ReadonlyArray<string | undefined>): string {
  const parts = EXPORT_COLUMNS.map((column, c) => {
    const value = fields[c];
    const json = value === undefined ? 'null' : column === 'decision' ? `"${value}"` : value;
    return `"${column}":${json}`;
  });
  return `{${parts.join(',')}}\n`;
}
