import { SimulatorError } from './errors.js';
import { LineCounter, isMap, isPair, isScalar, isSeq, parseDocument, type Node } from 'yaml';

/** SourcePosition is a place in a scenario file: line and column, both from 1. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/**
 * positionOf returns where the scenario field `field` (a path such as `policies[0].policy.limit`)
 * is written in `text` (YAML or JSON): the key of a map entry, the item of a list, or, for a field
 * that is missing, the start of the object that should hold it. Undefined when no part of the
 * path is in the text (or the text does not parse).
 */
export function positionOf(text: string, field: string): SourcePosition | undefined {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter });
  if (document.errors.length > 0) return undefined;
  let node: unknown = document.contents;
  let offset = rangeStart(node);
  for (const segment of segmentsOf(field)) {
    const found = childOf(node, segment);
    if (found === undefined) break;
    node = found.node;
    offset = found.offset ?? offset;
  }
  if (offset === undefined) return undefined;
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/** The segments of a field path: `policies[0].policy` is `policies`, 0, `policy`. */
function segmentsOf(field: string): Array<string | number> {
  const segments: Array<string | number> = [];
  for (const match of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g))
    segments.push(match[2] === undefined ? match[1]! : Number(match[2]));
  return segments;
}

/** The node under `segment` of a map or list, with where its key (or item) starts. */
function childOf(node: unknown, segment: string | number): { node: unknown; offset: number | undefined } | undefined {
  if (isSeq(node) && typeof segment === 'number') {
    const item = node.items[segment];
    return item === undefined ? undefined : { node: item, offset: rangeStart(item) };
  }
  if (!isMap(node)) return undefined;
  const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
  if (pair === undefined) return undefined;
  return { node: pair.value, offset: rangeStart(pair.key) ?? rangeStart(pair.value) };
}

function rangeStart(node: unknown): number | undefined {
  return (node as Node | null)?.range?.[0];
}

/**
 * withPosition runs `work` and returns what it returns; a scenario error it throws that names a
 * field comes back prefixed with where that field is written in `file` (whose text is `text`),
 * `file:line:column: `, as editors and compilers print it.
 */
export async function withPosition<T>(file: string, text: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof SimulatorError) || error.code !== 'INVALID_SCENARIO') throw error;
    const at = error.field === '' ? { line: 1, column: 1 } : positionOf(text, error.field);
    if (at === undefined || error.message.startsWith(file)) throw error;
    throw new SimulatorError('INVALID_SCENARIO', `${file}:${at.line}:${at.column}: ${error.message}`, error.field, {
      cause: error,
    });
  }
}
