/**
 * Hostile YAML for the fuzzing of config and scenario readers: real files (examples, fixtures)
 * mutated by inserting, deleting and repeating pieces, and YAML's own sharp edges (aliases, tags,
 * merge keys, deep nesting). Text only: the caller parses it with its own YAML library.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { hostileText } from './hostile.js';

/** yamlFilesIn returns the text of every `.yaml` file under `dirs` (recursively). */
export function yamlFilesIn(...dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.yaml')) out.push(readFileSync(path, 'utf8'));
    }
  };
  dirs.forEach(walk);
  return out;
}

/** YAML_EDGES are pieces of YAML that parsers and readers tend to get wrong. */
const YAML_EDGES = [
  '&a ',
  '*a',
  '*missing',
  '<<: *a\n',
  '!!binary ',
  '!!str ',
  '!!js/function ',
  '!custom ',
  '? ',
  '- ',
  ': ',
  '\n',
  '\n  ',
  '\t',
  '---\n',
  '...\n',
  '%YAML 1.1\n',
  '{',
  '}',
  '[',
  ']',
  '"',
  "'",
  '|\n',
  '>-\n',
  '#',
  '~',
  '.nan',
  '.inf',
  '-.inf',
  '0x7fffffffffffffff',
  '1e999',
  '-0',
  '0o777',
  '1_000',
  '2026-11-29',
  '__proto__',
  '${FUZZ_UNSET}',
  '${HOME}',
];

/** mutated returns `text` with a few edits of hostile pieces and YAML edges. */
export function mutated(texts: readonly string[]): fc.Arbitrary<string> {
  const piece = fc.oneof(fc.constantFrom(...YAML_EDGES), hostileText(3));
  const edit = fc.tuple(fc.nat(), fc.nat({ max: 40 }), fc.constantFrom('insert', 'delete', 'repeat', 'replace'), piece);
  return fc.tuple(fc.constantFrom(...texts), fc.array(edit, { minLength: 1, maxLength: 6 })).map(([text, edits]) => {
    for (const [at, length, kind, p] of edits) {
      const i = text.length === 0 ? 0 : at % text.length;
      const cut = text.slice(i, i + length);
      if (kind === 'insert') text = text.slice(0, i) + p + text.slice(i);
      else if (kind === 'delete') text = text.slice(0, i) + text.slice(i + length);
      else if (kind === 'repeat') text = text.slice(0, i) + cut + cut + text.slice(i);
      else text = text.slice(0, i) + p + text.slice(i + length);
    }
    return text;
  });
}

/** deepYaml returns YAML nested `depth` levels deep, in flow or block style. */
export const deepYaml: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom('flow-list', 'flow-map', 'block'))
  .map(([depth, style]) => {
    if (style === 'flow-list') return '['.repeat(depth) + ']'.repeat(depth);
    if (style === 'flow-map') return '{a: '.repeat(depth) + '1' + '}'.repeat(depth);
    const lines: string[] = [];
    for (let i = 0; i < Math.min(depth, 2000); i++) lines.push(' '.repeat(i) + 'a:');
    return lines.join('\n') + ' 1\n';
  });

/** BILLION_LAUGHS is YAML whose aliases expand to 10^9 items when followed. */
export const BILLION_LAUGHS = [
  'a: &a [x, x, x, x, x, x, x, x, x, x]',
  ...'bcdefghi'.split('').map(
    (c, i) =>
      `${c}: &${c} [${Array(10)
        .fill('*' + 'abcdefghi'[i])
        .join(', ')}]`,
  ),
].join('\n');
