/**
 * What kind of file `floodgate check` was given, read from its top-level keys: each file the
 * project reads has keys no other kind has, so a file is told apart before it is checked, and a
 * mistake in it is reported by the reader of its own kind (never "remove key domain" from the
 * gateway config's reader on an Envoy descriptor file).
 */
import { extname } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** FileKind is a kind of file that a floodgate command reads. */
export type FileKind = 'gateway-config' | 'descriptors' | 'scenario' | 'trace' | 'json-schema' | 'unknown';

/** KIND_INFO says, for each kind, what it is and which command reads it. */
export const KIND_INFO: Readonly<Record<FileKind, { readonly what: string; readonly readBy: string }>> = {
  'gateway-config': { what: 'a gateway config', readBy: 'floodgate serve --config <file>' },
  descriptors: {
    what: "an Envoy descriptor file (envoyproxy/ratelimit's format)",
    readBy: "floodgate ratelimit --config <file>, or a gateway config's rateLimitService.descriptors",
  },
  scenario: { what: 'a simulator scenario', readBy: 'floodgate simulate --scenario <file>' },
  trace: {
    what: 'a simulator trace (CSV or JSON lines of atMs, key, cost)',
    readBy: "a scenario's traffic entry { type: trace, file: <file> }, run by floodgate simulate",
  },
  unknown: {
    what: "not a kind of file floodgate reads (none of its top-level keys is a gateway config's, an Envoy descriptor file's or a simulator scenario's)",
    readBy: 'no floodgate command; as a gateway config, floodgate serve --config <file> would refuse it so',
  },
  'json-schema': {
    what: 'a JSON Schema (floodgate schema prints the gateway config\u2019s, for editors)',
    readBy: 'an editor; no floodgate command reads it',
  },
};

/** Top-level keys only a simulator scenario has. */
const SCENARIO_KEYS = ['policies', 'service', 'protections', 'traffic', 'durationMs', 'bucketMs'];
/** Top-level keys of an Envoy descriptor file. */
const DESCRIPTOR_KEYS = ['domain', 'descriptors'];

/**
 * fileKindOf returns the kind of the file at `path` whose text is `text`: a trace by its extension
 * (`.csv`, `.jsonl`, `.ndjson`), else by the top-level keys of its first YAML (or JSON) document;
 * `gatewayKeys` are the gateway config's own top-level keys. A map whose keys are none of any
 * kind's is `unknown` (still checked as a gateway config, saying so); an empty file, one that is not
 * YAML or not a map is a gateway config, `floodgate check`'s default, so that its reader reports
 * what is wrong with it.
 */
export function fileKindOf(path: string, text: string, gatewayKeys: readonly string[]): FileKind {
  if (['.csv', '.jsonl', '.ndjson'].includes(extname(path).toLowerCase())) return 'trace';
  const keys = topLevelKeys(text);
  if (keys.includes('$schema')) return 'json-schema';
  const count = (names: readonly string[]): number => keys.filter((k) => names.includes(k)).length;
  const gateway = count(gatewayKeys);
  if (keys.includes('domain') && count(DESCRIPTOR_KEYS) > gateway) return 'descriptors';
  if (count(SCENARIO_KEYS) > gateway) return 'scenario';
  if (keys.length > 0 && gateway === 0 && !keys.includes('domain')) return 'unknown';
  return 'gateway-config';
}

/** The keys of the first document's top-level map (none when it is not a map or does not parse). */
function topLevelKeys(text: string): string[] {
  let value: unknown;
  try {
    const first = parseAllDocuments(text)[0];
    if (first === undefined || !('toJS' in first) || first.errors.length > 0) return [];
    value = first.toJS();
  } catch {
    return [];
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.keys(value) : [];
}
