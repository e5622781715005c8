/**
 * `floodgate check <file>`: says what kind of file it was given and which command reads it, then
 * checks it with that command's own reader: a gateway config with the config loader (descriptor
 * files included), an Envoy descriptor file with `floodgate ratelimit`'s, a simulator scenario with
 * the simulator's parser (and its trace files with the trace reader), a trace with the trace reader.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../config/load.js';
import { ConfigError, formatProblem } from '../config/problems.js';
import { jsonSchema } from '../config/schema.js';
import { fileKindOf, KIND_INFO, type FileKind } from './file-kind.js';

/** CheckIo is where `floodgate check` writes. */
export interface CheckIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** A kind's check: the summary line of a valid file (and its warnings, one per line), or every problem found, one per line. */
type Checked = { summary: string; warnings?: readonly string[] } | { problems: string[] };

/**
 * checkFile checks `file` as the kind of file it is and returns the exit code: 0 valid, 1 invalid
 * or unreadable. The first line says what the file is and which command reads it.
 *
 * @example
 * process.exitCode = await checkFile('examples/gateway/floodgate.yaml', process);
 */
export async function checkFile(file: string, io: CheckIo): Promise<number> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    // The gateway config's loader reports an unreadable file in its own words.
    return report(file, 'gateway-config', await checkGatewayConfig(file), io);
  }
  const kind = fileKindOf(file, text, gatewayKeys());
  return report(file, kind, await CHECKS[kind](file, text), io);
}

function report(file: string, kind: FileKind, checked: Checked, io: CheckIo): number {
  const { what, readBy } = KIND_INFO[kind];
  const head = `${file}: ${what}, read by ${readBy.replace('<file>', file)}`;
  if ('summary' in checked) {
    io.stdout.write(`${head}: valid (${checked.summary})\n`);
    for (const w of checked.warnings ?? []) io.stdout.write(`warning: ${w}\n`);
    return 0;
  }
  const n = checked.problems.length;
  io.stderr.write(`${head}\n${checked.problems.join('\n')}\n${n} problem${n === 1 ? '' : 's'} found\n`);
  return 1;
}

const CHECKS: Readonly<Record<FileKind, (file: string, text: string) => Promise<Checked>>> = {
  'gateway-config': (file) => checkGatewayConfig(file),
  unknown: (file) => checkGatewayConfig(file),
  descriptors: (file) => checkDescriptors(file),
  scenario: (file, text) => checkScenario(file, text),
  trace: (file, text) => checkTrace(file, text),
  'json-schema': () => Promise.resolve({ summary: 'nothing to check: run floodgate schema to print it afresh' }),
};

function gatewayKeys(): string[] {
  return Object.keys((jsonSchema() as { properties?: Record<string, unknown> }).properties ?? {});
}

async function checkGatewayConfig(file: string): Promise<Checked> {
  try {
    const { config, domains, warnings } = await loadConfig(file);
    const rules = config.routes.reduce((n, r) => n + r.rules.length, 0);
    const service =
      config.rateLimitService === undefined
        ? ''
        : `, a rate limit service for ${domains.length} domain${domains.length === 1 ? '' : 's'}: ${domains.map((d) => d.domain).join(', ')}`;
    return {
      summary: `${count(config.routes.length, 'route')}, ${count(rules, 'rule')}, ${config.store.type} store${service}`,
      warnings: warnings.map(formatProblem),
    };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { problems: err.problems.map(formatProblem) };
  }
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

async function checkDescriptors(file: string): Promise<Checked> {
  // floodgate ratelimit's own reader, loaded only here: its module brings gRPC.
  const { loadDescriptorPaths } = await import('./ratelimit.js');
  const loaded = loadDescriptorPaths([file]);
  if ('errors' in loaded) return { problems: loaded.errors };
  const { domains } = loaded.config;
  const count = domains.reduce((n, d) => n + d.descriptors.length, 0);
  return {
    summary: `${domains.length} domain${domains.length === 1 ? '' : 's'}: ${domains.map((d) => d.domain).join(', ')}; ${count} top-level descriptor${count === 1 ? '' : 's'}`,
  };
}

async function checkScenario(file: string, text: string): Promise<Checked> {
  const simulator = await import('floodgate-simulator');
  let data: unknown;
  try {
    data = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    return { problems: [`${file}: not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`] };
  }
  const value = data as Record<string, unknown>;
  try {
    const scenario =
      value['service'] !== undefined ? simulator.parseServiceScenario(data) : simulator.parseScenario(data);
    const traces = await checkTraceFiles(file, value['traffic'], simulator);
    if (traces.length > 0) return { problems: traces };
    const lanes =
      'policies' in scenario ? `${scenario.policies.length} policies` : `${scenario.protections.length} protections`;
    return { summary: `${lanes}, ${scenario.traffic.length} traffic sources, ${scenario.durationMs} ms` };
  } catch (err) {
    if (!(err instanceof simulator.SimulatorError)) throw err;
    // Placed as floodgate simulate places it: the simulator's own positionOf.
    const at = err.field === '' ? { line: 1, column: 1 } : simulator.positionOf(text, err.field);
    const where = at === undefined || err.message.startsWith(file) ? '' : `${file}:${at.line}:${at.column}: `;
    return { problems: [`${where}${err.message}`] };
  }
}

/** Reads each trace file a scenario's traffic names (relative to it), as `floodgate simulate` does. */
async function checkTraceFiles(
  file: string,
  traffic: unknown,
  simulator: typeof import('floodgate-simulator'),
): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, source] of (Array.isArray(traffic) ? traffic : []).entries()) {
    const s = source as { type?: unknown; file?: unknown; format?: unknown };
    if (s.type !== 'trace' || typeof s.file !== 'string') continue;
    const path = resolve(dirname(file), s.file);
    try {
      const format = s.format === 'csv' || s.format === 'jsonl' ? s.format : simulator.traceFormatOf(path);
      simulator.parseTrace(await readFile(path, 'utf8'), format, s.file);
    } catch (err) {
      problems.push(`${file}: traffic[${i}].file: ${(err as Error).message}`);
    }
  }
  return problems;
}

async function checkTrace(file: string, text: string): Promise<Checked> {
  const simulator = await import('floodgate-simulator');
  try {
    const rows = simulator.parseTrace(text, simulator.traceFormatOf(file), file);
    return { summary: `${rows.length} requests` };
  } catch (err) {
    return { problems: [(err as Error).message] };
  }
}
