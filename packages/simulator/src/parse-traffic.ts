import { Fields, invalid } from './fields.js';
import type { KeySpread, SourceBase, TraceRow, TrafficSpec } from './scenario.js';

const TRAFFIC_TYPES = ['constant', 'burst', 'boundary-burst', 'ramp', 'poisson', 'on-off', 'trace'] as const;
const MS = { min: 0 };
const RATE = { min: 0, max: 1e7 };

/** parseTraffic returns the checked traffic source at `path` of a scenario lasting `durationMs`. */
export function parseTraffic(value: unknown, path: string, durationMs: number): TrafficSpec {
  const f = new Fields(value, path);
  const type = f.choice('type', TRAFFIC_TYPES);
  const spec = type === 'trace' ? parseTrace(f) : parseGenerated(f, type, durationMs);
  f.done();
  return spec;
}

function parseGenerated(
  f: Fields,
  type: Exclude<(typeof TRAFFIC_TYPES)[number], 'trace'>,
  durationMs: number,
): TrafficSpec {
  const base = parseBase(f);
  const span = () => {
    const startMs = f.number('startMs', MS, 0);
    const endMs = f.number('endMs', MS, durationMs);
    if (endMs < startMs) throw invalid(f.at('endMs'), `must not be before startMs (${startMs}), got ${endMs}`);
    return { startMs, endMs };
  };
  switch (type) {
    case 'constant':
    case 'poisson':
      return { ...base, type, ratePerSecond: f.number('ratePerSecond', RATE), ...span() };
    case 'burst':
      return {
        ...base,
        type,
        atMs: f.number('atMs', MS),
        count: f.number('count', { min: 1, integer: true, max: 1e8 }),
        spreadMs: f.number('spreadMs', MS, 0),
      };
    case 'boundary-burst':
      return {
        ...base,
        type,
        boundaryMs: f.number('boundaryMs', { min: 1 }),
        count: f.number('count', { min: 1, integer: true, max: 1e8 }),
        gapMs: f.number('gapMs', { min: 0, above: true }, 1),
      };
    case 'ramp':
      return {
        ...base,
        type,
        fromPerSecond: f.number('fromPerSecond', RATE),
        toPerSecond: f.number('toPerSecond', RATE),
        ...span(),
      };
    case 'on-off':
      return {
        ...base,
        type,
        ratePerSecond: f.number('ratePerSecond', RATE),
        onMs: f.number('onMs', { min: 0, above: true }),
        offMs: f.number('offMs', MS),
        ...span(),
      };
  }
}

function parseBase(f: Fields): SourceBase {
  const key = f.string('key', 'k');
  const cost = f.number('cost', { min: 0 }, 1);
  if (!f.has('keys')) {
    f.raw('keys');
    return { key, keys: undefined, cost };
  }
  const k = new Fields(f.raw('keys'), f.at('keys'));
  const keys: KeySpread = {
    count: k.number('count', { min: 1, integer: true, max: 10_000_000 }),
    zipfExponent: k.number('zipfExponent', { min: 0, max: 10 }, 0),
    prefix: k.string('prefix', `${key}:`),
  };
  k.done();
  return { key, keys, cost };
}

function parseTrace(f: Fields): TrafficSpec {
  const file = f.has('file') ? f.string('file') : (f.raw('file') as undefined);
  const format = f.has('format') ? f.choice('format', ['csv', 'jsonl'] as const) : (f.raw('format') as undefined);
  const rawRows = f.array('rows');
  if (file === undefined && !f.has('rows'))
    throw invalid(f.at('rows'), 'is required when no file is given (a list of { atMs, key?, cost? })');
  const rows = rawRows.map((row, i) => parseRow(row, `${f.at('rows')}[${i}]`));
  return { type: 'trace', rows, file, format };
}

function parseRow(value: unknown, path: string): TraceRow {
  const r = new Fields(value, path);
  const row: TraceRow = { atMs: r.number('atMs', MS) };
  if (r.has('key')) row.key = r.string('key');
  else r.raw('key');
  if (r.has('cost')) row.cost = r.number('cost', { min: 0 });
  else r.raw('cost');
  r.done();
  return row;
}
