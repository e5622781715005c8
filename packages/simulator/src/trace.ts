import { SimulatorError } from './errors.js';
import type { TraceRow } from './scenario.js';

/**
 * parseTrace returns the rows of a replayed trace: CSV lines `atMs[,key[,cost]]` (a first line
 * that is not a number is taken as a header; blank lines and lines starting with `#` are skipped)
 * or JSON lines `{"atMs": 12.5, "key": "a", "cost": 2}`. `source` names the file in errors, which
 * are `INVALID_TRACE` {@link SimulatorError}s whose `field` is `source:line`.
 *
 * @example
 * parseTrace('0,alice\n10,bob,2\n', 'csv', 'trace.csv');
 * // [{ atMs: 0, key: 'alice' }, { atMs: 10, key: 'bob', cost: 2 }]
 */
export function parseTrace(text: string, format: 'csv' | 'jsonl', source: string): TraceRow[] {
  const rows: TraceRow[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${source}:${i + 1}`;
    if (format === 'jsonl') rows.push(jsonRow(line, where));
    else if (rows.length > 0 || !isHeader(line)) rows.push(csvRow(line, where));
  }
  return rows;
}

/** traceFormatOf returns the format a trace file's name implies: `jsonl` for .jsonl/.ndjson/.json, else `csv`. */
export function traceFormatOf(file: string): 'csv' | 'jsonl' {
  return /\.(jsonl|ndjson|json)$/i.test(file) ? 'jsonl' : 'csv';
}

function isHeader(line: string): boolean {
  const first = line.split(',')[0]!.trim();
  return first !== '' && Number.isNaN(Number(first));
}

function csvRow(line: string, where: string): TraceRow {
  const cells = line.split(',').map((c) => c.trim());
  if (cells.length > 3) throw bad(where, `has ${cells.length} columns; expected atMs[,key[,cost]]`);
  const row: TraceRow = { atMs: timeOf(cells[0]!, where) };
  if (cells[1] !== undefined && cells[1] !== '') row.key = cells[1];
  if (cells[2] !== undefined && cells[2] !== '') row.cost = costOf(cells[2], where);
  return row;
}

function jsonRow(line: string, where: string): TraceRow {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw bad(where, `is not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad(where, 'must be a JSON object { "atMs": ..., "key"?: ..., "cost"?: ... }');
  const { atMs, key, cost, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined)
    throw bad(where, `has an unknown field ${JSON.stringify(unknown)}; expected atMs, key, cost`);
  const row: TraceRow = { atMs: timeOf(atMs, where) };
  if (key !== undefined) {
    if (typeof key !== 'string' || key === '') throw bad(where, 'key must be a non-empty string');
    row.key = key;
  }
  if (cost !== undefined) row.cost = costOf(cost, where);
  return row;
}

function timeOf(value: unknown, where: string): number {
  const ms = typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : NaN;
  if (!Number.isFinite(ms) || ms < 0)
    throw bad(where, `atMs must be a finite number of ms, at least 0, got ${JSON.stringify(value)}`);
  return ms;
}

function costOf(value: unknown, where: string): number {
  const cost = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  if (!Number.isFinite(cost) || cost < 0)
    throw bad(where, `cost must be a finite number, at least 0, got ${JSON.stringify(value)}`);
  return cost;
}

function bad(where: string, problem: string): SimulatorError {
  return new SimulatorError('INVALID_TRACE', `trace line ${where} ${problem}`, where);
}
