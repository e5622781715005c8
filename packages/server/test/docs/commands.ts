/**
 * The commands a Markdown page shows a reader, found the way a reader finds them: each command line
 * of a fenced `sh`, `bash` or `shell` block (in a `console` block, the lines after a `$ ` prompt),
 * and each inline code span that starts with a program (`npm`, `npx`, `node`, `floodgate`, `curl`,
 * ...). A span that is only `floodgate <subcommand>` names the subcommand and is not a command, nor
 * is one where a word other than a subcommand or a flag follows `floodgate` (prose about it).
 *
 * A page marks a command it shows that CI cannot run with an HTML comment listing it, one per line,
 * with the reason:
 *
 * ```
 * <!-- not run in CI:
 * `npm run bench`: a benchmark, minutes of CPU; it prints figures, it asserts nothing
 * -->
 * ```
 */

/** DocCommand is one command a page shows, with where it is. */
export interface DocCommand {
  /** The page's path, as given to {@link extractCommands}. */
  readonly file: string;
  /** The 1-based line of the command (of its first line, for a continued one). */
  readonly line: number;
  /** The command as written, continuation lines joined and a `$ ` prompt removed. */
  readonly text: string;
  /** Where it was written: a line of a fenced block, or an inline code span. */
  readonly form: 'block' | 'inline';
}

/** NotRunMark is one command a page marks as not run in CI, and why. */
export interface NotRunMark {
  readonly file: string;
  readonly line: number;
  readonly text: string;
  readonly reason: string;
}

/** The programs whose inline code spans are commands. */
const PROGRAMS = [
  'floodgate',
  'npm',
  'npx',
  'node',
  'curl',
  'apt-get',
  'redis-server',
  'redis-cli',
  'redis-benchmark',
  'docker',
  'wrk',
  'git',
  'systemctl',
];

const SHELL_BLOCKS = new Set(['sh', 'bash', 'shell']);
const FLOODGATE_SUBCOMMANDS = new Set(['serve', 'ratelimit', 'check', 'schema', 'simulate']);

/** extractCommands returns every command `markdown` shows, in page order. */
export function extractCommands(file: string, markdown: string): DocCommand[] {
  const lines = markdown.split('\n');
  const found: DocCommand[] = [];
  let fence: { marker: string; lang: string } | undefined;
  let pending: { line: number; text: string } | undefined;
  let paragraph: { line: number; lines: string[] } | undefined;
  const endParagraph = (): void => {
    if (paragraph !== undefined) found.push(...inlineCommands(file, paragraph.line, paragraph.lines));
    paragraph = undefined;
  };
  let comment = false;
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (fence === undefined && (comment || /^\s*<!--/.test(raw))) {
      // An HTML comment (a "not run in CI" list among them) shows the reader nothing.
      endParagraph();
      comment = !raw.includes('-->');
      return;
    }
    const open = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(raw);
    if (fence === undefined) {
      if (open !== null || raw.trim() === '') endParagraph();
      if (open !== null) fence = { marker: open[1]!, lang: open[2]!.toLowerCase() };
      else if (raw.trim() !== '') (paragraph ??= { line, lines: [] }).lines.push(raw);
      return;
    }
    if (raw.trim().startsWith(fence.marker)) {
      fence = undefined;
      return;
    }
    const command = blockCommand(fence.lang, raw);
    if (command === undefined) return;
    const start = pending ?? { line, text: '' };
    const text = `${start.text}${command}`;
    if (text.endsWith('\\')) pending = { line: start.line, text: `${text.slice(0, -1).trimEnd()} ` };
    else {
      pending = undefined;
      found.push({ file, line: start.line, text: text.trim(), form: 'block' });
    }
  });
  endParagraph();
  return found;
}

/** The command on one line of a fenced block of language `lang`, or undefined for none. */
function blockCommand(lang: string, raw: string): string | undefined {
  const trimmed = raw.trim();
  if (lang === 'console') return trimmed.startsWith('$ ') ? trimmed.slice(2).trim() : undefined;
  if (!SHELL_BLOCKS.has(lang) || trimmed === '' || trimmed.startsWith('#')) return undefined;
  return trimmed.startsWith('$ ') ? trimmed.slice(2).trim() : trimmed;
}

/** The commands of one paragraph's inline code spans (a span may run across its lines). */
function inlineCommands(file: string, firstLine: number, lines: readonly string[]): DocCommand[] {
  const found: DocCommand[] = [];
  const joined = lines.join('\n');
  for (const match of joined.matchAll(/(`+)([^`]+?)\1(?!`)/g)) {
    const text = match[2]!.replace(/\s+/g, ' ').trim();
    const words = text.split(' ');
    if (!PROGRAMS.includes(words[0]!) || words.length === 1) continue;
    // `floodgate serve` names a subcommand; `floodgate ÷ this` is prose about floodgate.
    if (words[0] === 'floodgate' && !FLOODGATE_SUBCOMMANDS.has(words[1]!) && !words[1]!.startsWith('-')) continue;
    if (words[0] === 'floodgate' && words.length === 2 && FLOODGATE_SUBCOMMANDS.has(words[1]!)) continue;
    const line = firstLine + (joined.slice(0, match.index).match(/\n/g)?.length ?? 0);
    found.push({ file, line, text, form: 'inline' });
  }
  return found;
}

/** notRunMarks returns the commands `markdown` marks as not run in CI, each with its reason. */
export function notRunMarks(file: string, markdown: string): NotRunMark[] {
  const marks: NotRunMark[] = [];
  const lines = markdown.split('\n');
  let inside = false;
  lines.forEach((raw, index) => {
    if (!inside && /^\s*<!--\s*not run in CI:\s*$/.test(raw)) {
      inside = true;
      return;
    }
    if (!inside) return;
    if (/^\s*-->\s*$/.test(raw)) {
      inside = false;
      return;
    }
    if (raw.trim() === '') return;
    const entry = /^\s*`([^`]+)`:\s*(\S.*)$/.exec(raw);
    if (entry === null)
      throw new Error(`${file}:${index + 1}: a "not run in CI" line is \`command\`: reason, got "${raw.trim()}"`);
    marks.push({ file, line: index + 1, text: entry[1]!, reason: entry[2]!.trim() });
  });
  if (inside) throw new Error(`${file}: a "not run in CI" comment is not closed with -->`);
  return marks;
}

/** splitChain returns the commands of `a && b && c` (one, for a command without `&&`). */
export function splitChain(text: string): string[] {
  return text
    .replace(/\s+#.*$/, '')
    .split(/\s+&&\s+/)
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** ciRunCommands returns the commands a CI script runs, one per non-comment line. */
export function ciRunCommands(script: string): string[] {
  return script
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** runByCi returns whether CI's script runs `command` as written (possibly with more flags). */
export function runByCi(command: string, ciLines: readonly string[]): boolean {
  return ciLines.some((line) => line === command || line.startsWith(`${command} `));
}
