import { mkdir, open, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { SimulatorError } from './errors.js';
import { Fields } from './fields.js';
import { withPosition } from './scenario-position.js';
import { renderCharts, type Chart } from './render/charts.js';
import { exportDecisions, exportFormatOf, type ExportFormat } from './render/export.js';
import { renderHtmlReport } from './render/html-report.js';
import { renderServiceCharts } from './render/service-charts.js';
import { renderServiceHtmlReport } from './render/service-report.js';
import { renderServiceJsonSummary, renderServiceTextSummary } from './render/service-summary.js';
import { renderJsonSummary, renderTextSummary } from './render/summary.js';
import { simulateService, type ServiceSimulationResult } from './service/simulate-service.js';
import { simulate, type SimulationResult } from './simulate.js';
import { parseTrace, traceFormatOf } from './trace.js';

/** CommandIo is where {@link runSimulateCommand} writes and which directory relative paths start from. */
export interface CommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  cwd: string;
}

const USAGE = `Usage: floodgate simulate --scenario <file.yaml|file.json> [--out <dir>] [--export <file.csv|file.jsonl>]
                          [--format text|json] [--seed <n>]

Runs the scenario's traffic through each of its policies on virtual time, with floodgate's own
limiters, and scores them against an exact oracle. A scenario with a service section runs its
traffic through each of its protections (none, a fixed or an adaptive concurrency limit) into
identical copies of that service instead. Same scenario and seed, same bytes out.

  -s, --scenario <file>   the scenario, YAML or JSON (trace files are read relative to it)
  -o, --out <dir>         write report.html, the charts (admitted.svg, state-N.svg per lane,
                          wait.svg when a lane waits, window.svg; leases.svg, nodes-N.svg and
                          held-N.svg when a lane leases; for a service: concurrency.svg,
                          goodput.svg, latency*.svg), summary.json and summary.txt
  -e, --export <file>     write every decision, one a line: CSV (.csv) or JSON lines (.jsonl):
                          lane, atMs, key, node, cost, decision, waitMs, stateAfter, state
  -f, --format <format>   the summary printed on stdout: text (default) or json
      --seed <n>          override the scenario's seed
  -h, --help              print this help

Exit status: 0 done, 2 bad flags, scenario or trace, 1 a file could not be read or written.
`;

/**
 * runSimulateCommand runs `floodgate simulate` with `args` (the words after `simulate`) and
 * returns the exit code: 0 when done, 2 for a bad flag, scenario or trace (the message, naming
 * the field, goes to `io.stderr`), 1 when a file could not be read or written (or, reported the
 * same way, on a fault of the simulator itself).
 *
 * @example
 * const code = await runSimulateCommand(['--scenario', 'boundary.yaml', '--out', 'report'],
 *   { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() });
 * process.exitCode = code;
 */
export async function runSimulateCommand(args: string[], io: CommandIo): Promise<number> {
  try {
    const flags = readFlags(args);
    if (flags.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    const scenarioPath = resolve(io.cwd, flags.scenario);
    const source = await readText(scenarioPath, '--scenario');
    const report = await withPosition(flags.scenario, source, async () => {
      const scenario = await loadScenario(scenarioPath, source, flags.seed);
      return scenario.service !== undefined
        ? reportOf(simulateService(scenario), SERVICE)
        : reportOf(await simulate(scenario, { keepStates: flags.export !== undefined }), RATE_LIMIT);
    });
    if (flags.out !== undefined) await writeOutputs(resolve(io.cwd, flags.out), report.files());
    if (flags.export !== undefined) await writeExport(resolve(io.cwd, flags.export), report.decisions);
    io.stdout.write(flags.format === 'json' ? report.json : report.text);
    return 0;
  } catch (error) {
    if (!(error instanceof SimulatorError)) {
      // A fault of the simulator itself, not of the input: reported, never a crash of the CLI.
      io.stderr.write(
        `floodgate simulate: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      return 1;
    }
    io.stderr.write(`floodgate simulate: ${error.message}\n`);
    if (error.code === 'INVALID_ARGUMENT') io.stderr.write(`Run 'floodgate simulate --help' for usage.\n`);
    return error.code === 'IO_ERROR' ? 1 : 2;
  }
}

interface Flags {
  help: boolean;
  scenario: string;
  out: string | undefined;
  export: string | undefined;
  format: 'text' | 'json';
  seed: number | undefined;
}

function readFlags(args: string[]): Flags {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      allowPositionals: false,
      strict: true,
      options: {
        scenario: { type: 'string', short: 's' },
        out: { type: 'string', short: 'o' },
        export: { type: 'string', short: 'e' },
        format: { type: 'string', short: 'f' },
        seed: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new SimulatorError('INVALID_ARGUMENT', (error as Error).message, 'args', { cause: error });
  }
  if (values.help === true)
    return { help: true, scenario: '', out: undefined, export: undefined, format: 'text', seed: undefined };
  const exportFile = values.export as string | undefined;
  if (exportFile !== undefined && exportFormatOf(exportFile) === undefined)
    throw new SimulatorError(
      'INVALID_ARGUMENT',
      `--export must name a .csv, .jsonl or .ndjson file, got ${JSON.stringify(exportFile)}`,
      '--export',
    );
  if (typeof values.scenario !== 'string')
    throw new SimulatorError('INVALID_ARGUMENT', '--scenario <file> is required', '--scenario');
  const format = values.format ?? 'text';
  if (format !== 'text' && format !== 'json')
    throw new SimulatorError(
      'INVALID_ARGUMENT',
      `--format must be text or json, got ${JSON.stringify(format)}`,
      '--format',
    );
  let seed: number | undefined;
  if (values.seed !== undefined) {
    seed = Number(values.seed);
    if (!/^\d+$/.test(String(values.seed)) || seed > 2 ** 32 - 1)
      throw new SimulatorError(
        'INVALID_ARGUMENT',
        `--seed must be a whole number from 0 to 4294967295, got ${JSON.stringify(values.seed)}`,
        '--seed',
      );
  }
  return {
    help: false,
    scenario: values.scenario,
    out: values.out as string | undefined,
    export: exportFile,
    format,
    seed,
  };
}

/** Parses the scenario file's text, reads its trace files into rows, and applies a seed override. */
async function loadScenario(path: string, text: string, seed: number | undefined): Promise<Record<string, unknown>> {
  let data: unknown;
  try {
    data = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new SimulatorError(
      'INVALID_SCENARIO',
      `${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
      path,
      { cause: error },
    );
  }
  if (data === null || data === undefined)
    throw new SimulatorError(
      'INVALID_SCENARIO',
      'the scenario file is empty: it needs durationMs, traffic and policies (or a service section); see packages/simulator/scenarios/ for examples',
      '',
    );
  new Fields(data, ''); // the top level must be an object before it is read below
  const scenario = { ...(data as Record<string, unknown>) };
  if (seed !== undefined) scenario.seed = seed;
  if (Array.isArray(scenario.traffic)) {
    scenario.traffic = await Promise.all(
      scenario.traffic.map((source: unknown, i: number) => loadTraceFile(source, i, dirname(path))),
    );
  }
  return scenario;
}

/** A trace source with a `file` gets that file's rows (a source with inline rows is left as it is). */
async function loadTraceFile(source: unknown, index: number, baseDir: string): Promise<unknown> {
  if (typeof source !== 'object' || source === null) return source;
  const s = source as Record<string, unknown>;
  if (s.type !== 'trace' || typeof s.file !== 'string' || s.rows !== undefined) return source;
  const file = resolve(baseDir, s.file);
  const format = s.format === 'csv' || s.format === 'jsonl' ? s.format : traceFormatOf(file);
  const rows = parseTrace(await readText(file, `traffic[${index}].file`), format, s.file);
  return { ...s, rows };
}

async function readText(path: string, field: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new SimulatorError('IO_ERROR', `cannot read ${path} (${field}): ${(error as Error).message}`, field, {
      cause: error,
    });
  }
}

/** Report is what a run prints (as text or JSON) and writes to --out. */
interface Report {
  readonly text: string;
  readonly json: string;
  /** The files of --out, by name; rendered only when asked for. */
  files(): Array<[string, string]>;
  /** The text of --export, in chunks (undefined: this kind of run has no per-request decisions). */
  decisions: ((format: ExportFormat) => Iterable<string>) | undefined;
}

/** Renderers of one kind of result: its text and JSON summaries, its charts and its HTML report. */
interface Renderers<R> {
  text(result: R): string;
  json(result: R): string;
  charts(result: R): Chart[];
  html(result: R, charts: readonly Chart[]): string;
  decisions?(result: R, format: ExportFormat): Iterable<string>;
}

function reportOf<R>(result: R, render: Renderers<R>): Report {
  const text = render.text(result);
  const json = render.json(result);
  const files = (): Array<[string, string]> => {
    const charts = render.charts(result);
    return [
      ['report.html', render.html(result, charts)],
      ...charts.map((c): [string, string] => [`${c.id}.svg`, c.svg]),
      ['summary.json', json],
      ['summary.txt', text],
    ];
  };
  const decisions = render.decisions?.bind(render);
  return { text, json, files, decisions: decisions && ((format: ExportFormat) => decisions(result, format)) };
}

const RATE_LIMIT: Renderers<SimulationResult> = {
  text: renderTextSummary,
  json: renderJsonSummary,
  charts: renderCharts,
  html: renderHtmlReport,
  decisions: exportDecisions,
};
const SERVICE: Renderers<ServiceSimulationResult> = {
  text: renderServiceTextSummary,
  json: renderServiceJsonSummary,
  charts: renderServiceCharts,
  html: renderServiceHtmlReport,
};

/** Writes the decisions export chunk by chunk (a million requests make tens of MB). */
async function writeExport(
  file: string,
  decisions: ((format: ExportFormat) => Iterable<string>) | undefined,
): Promise<void> {
  if (decisions === undefined)
    throw new SimulatorError(
      'INVALID_ARGUMENT',
      '--export applies to rate-limit scenarios (a service scenario has no per-request decisions to export)',
      '--export',
    );
  let handle: FileHandle | undefined;
  try {
    await mkdir(dirname(file), { recursive: true });
    handle = await open(file, 'w');
    for (const chunk of decisions(exportFormatOf(file)!)) await handle.write(chunk);
  } catch (error) {
    throw new SimulatorError(
      'IO_ERROR',
      `cannot write the export to ${file}: ${(error as Error).message}`,
      '--export',
      {
        cause: error,
      },
    );
  } finally {
    await handle?.close();
  }
}

async function writeOutputs(dir: string, files: Array<[string, string]>): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    for (const [name, content] of files) await writeFile(resolve(dir, name), content);
  } catch (error) {
    throw new SimulatorError('IO_ERROR', `cannot write the report to ${dir}: ${(error as Error).message}`, '--out', {
      cause: error,
    });
  }
}
