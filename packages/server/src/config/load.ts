/**
 * Loading a config file: YAML parsed with positions kept, validated by the strict schema and then
 * by the checks no schema can express, every problem reported at once with its line and a fix.
 */
import { readFile } from 'node:fs/promises';
import { isAlias, LineCounter, parse as parseYaml, parseDocument, visit, type Document, type YAMLError } from 'yaml';
import type { z } from 'zod';
import type { DomainSpec } from '../ratelimit/service/config.js';
import { checkConfig } from './checks.js';
import { loadDescriptorFiles } from './descriptors.js';
import { ConfigError, Locator, type ConfigProblem } from './problems.js';
import { configSchema, type GatewayConfig } from './schema.js';
import { loadTlsFiles, type TlsMaterial } from './tls-files.js';
import { configWarnings } from './warnings.js';

/** LoadedConfig is a checked config and where it came from. */
export interface LoadedConfig {
  readonly file: string;
  readonly config: GatewayConfig;
  /** The rateLimitService's domains, read from its descriptor files (empty without the section). */
  readonly domains: readonly DomainSpec[];
  /** The descriptor files' absolute paths (empty without a rateLimitService). */
  readonly descriptorFiles: readonly string[];
  /** The listener's certificate and key, read from `listen.tls`'s files; undefined without TLS. */
  readonly tls: TlsMaterial | undefined;
  /** Settings that are valid but risky or idle, each with its fix (see warnings.ts). */
  readonly warnings: readonly ConfigProblem[];
}

/**
 * loadConfig returns the checked config in `file`, with the domains of its rateLimitService's
 * descriptor files and the listener's TLS files (both read relative to `file`).
 *
 * @throws ConfigError `CONFIG_UNREADABLE` when the file cannot be read, `CONFIG_INVALID` listing every mistake.
 * @example
 * const { config } = await loadConfig('floodgate.yaml');
 */
export async function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const message = `cannot read the config file: ${(err as Error).message}`;
    throw new ConfigError('CONFIG_UNREADABLE', [
      { file, line: 0, column: 0, path: '', message, hint: 'give the path of a readable YAML file with --config' },
    ]);
  }
  const config = parseConfig(text, file, env);
  const descriptors = await loadDescriptorFiles(config, file, text);
  const tls = await loadTlsFiles(config.listen, file, text);
  const problems = [
    ...('problems' in descriptors ? descriptors.problems : []),
    ...('problems' in tls ? tls.problems : []),
  ];
  if ('problems' in descriptors || 'problems' in tls) throw new ConfigError('CONFIG_INVALID', problems);
  const warnings = configWarnings(config, parseYaml(text) as unknown, Locator.ofText(file, text));
  return {
    file,
    config,
    domains: descriptors.domains,
    descriptorFiles: descriptors.files,
    tls: tls.material,
    warnings,
  };
}

/**
 * parseConfig returns the checked config in `text` (named `file` in problems).
 *
 * @throws ConfigError `CONFIG_INVALID` listing every mistake found.
 */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const locator = new Locator(file, doc, lines);
  if (doc.errors.length > 0) throw new ConfigError('CONFIG_INVALID', syntaxProblems(doc.errors, lines, file));
  const parsed = configSchema.safeParse(plainOf(doc, lines, file) ?? {}, { reportInput: true });
  if (!parsed.success)
    throw new ConfigError(
      'CONFIG_INVALID',
      parsed.error.issues.map((i) => issueProblem(locator, i)),
    );
  const problems = checkConfig(parsed.data, locator, env);
  if (problems.length > 0) throw new ConfigError('CONFIG_INVALID', problems);
  return parsed.data;
}

/** MAX_SYNTAX_PROBLEMS is how many YAML syntax problems are listed; the rest are counted in one more. */
export const MAX_SYNTAX_PROBLEMS = 20;

/**
 * The problems of a document's YAML syntax errors: the first {@link MAX_SYNTAX_PROBLEMS}, then one
 * that counts the rest (text of garbage can hold one error per character: a list of them all would
 * be megabytes that help nobody).
 */
function syntaxProblems(errors: readonly YAMLError[], lines: LineCounter, file: string): ConfigProblem[] {
  const hint = 'fix the YAML syntax at that line (indentation, a missing colon, an unclosed quote, a repeated key)';
  const problems = errors.slice(0, MAX_SYNTAX_PROBLEMS).map((e): ConfigProblem => {
    const { line, col } = lines.linePos(e.pos[0]);
    return { file, line, column: col, path: '', message: `YAML syntax: ${e.message.split('\n')[0]}`, hint };
  });
  if (errors.length > MAX_SYNTAX_PROBLEMS) {
    const { line, col } = lines.linePos(errors[MAX_SYNTAX_PROBLEMS]!.pos[0]);
    problems.push({
      file,
      line,
      column: col,
      path: '',
      message: `YAML syntax: ${errors.length - MAX_SYNTAX_PROBLEMS} more problems from here on`,
      hint: 'fix the first ones: the later ones often follow from them',
    });
  }
  return problems;
}

/**
 * The plain value of a parsed document. The YAML library throws where an alias names no anchor
 * before it, or where aliases would expand past its bound (a "billion laughs"): a ConfigError at
 * the first alias then, as for any other syntax problem.
 */
function plainOf(doc: Document, lines: LineCounter, file: string): unknown {
  try {
    return doc.toJS();
  } catch (err) {
    let at = 0;
    visit(doc, (_, node) => {
      if (!isAlias(node)) return undefined;
      at = node.range?.[0] ?? 0;
      return visit.BREAK;
    });
    const { line, col } = lines.linePos(at);
    throw new ConfigError('CONFIG_INVALID', [
      {
        file,
        line,
        column: col,
        path: '',
        message: `YAML aliases: ${(err as Error).message}`,
        hint: 'define each anchor (&name) before its alias (*name), and use few aliases: write the values out in full',
      },
    ]);
  }
}

function issueProblem(locator: Locator, issue: z.core.$ZodIssue): ConfigProblem {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      return locator.problem(
        [...path, issue.keys[0]!],
        `unknown key ${keys}`,
        'remove it or correct its spelling; `floodgate schema` lists every key allowed',
      );
    }
    case 'invalid_type':
      return locator.problem(
        path,
        issue.input === undefined ? `missing ${issue.expected}` : issue.message,
        issue.input === undefined ? `add ${String(path.at(-1))}` : `write ${article(issue.expected)}`,
      );
    case 'invalid_union':
      return locator.problem(
        path,
        unionMessage(issue),
        "choose one of the kinds listed; `floodgate schema` shows each kind's keys",
      );
    case 'invalid_value':
      return locator.problem(
        path,
        `${issue.message}`,
        `use one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`,
      );
    default:
      return locator.problem(path, issue.message, hintOf(issue));
  }
}

function unionMessage(issue: z.core.$ZodIssueInvalidUnion): string {
  const note = (issue as { note?: string }).note;
  return note === undefined ? issue.message : `${issue.message}: ${note}`;
}

function hintOf(issue: z.core.$ZodIssue): string {
  if (issue.code === 'too_small')
    return `use a value of at least ${String(issue.minimum)}${issue.inclusive === false ? ' (exclusive)' : ''}`;
  if (issue.code === 'too_big') return `use a value of at most ${String(issue.maximum)}`;
  if (issue.code === 'invalid_format') return 'write it in the form the message names';
  return 'see `floodgate schema` for what this key takes';
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}
