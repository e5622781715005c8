/**
 * The README's quick starts are the files CI runs: each block marked `<!-- quickstart: FILE -->` is
 * byte for byte that file under examples/quickstart/ (or, marked `FILE, the store line`, one line of
 * it), each config is served by a command the README shows (which the docs test runs), and the
 * program is run by packages/floodgate/test/package/examples.test.ts. The front page keeps its
 * shape: at most 250 lines, every quick start within the first 150, none over 20 lines.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from './run.js';

/** Quickstart is one marked block of the README: the file it stands for, how, and where it ends. */
interface Quickstart {
  readonly file: string;
  readonly part: 'whole' | 'the store line';
  readonly body: string;
  readonly lines: number;
  readonly endLine: number;
}

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

/** quickstartsOf returns every marked block of `markdown`, in page order. */
function quickstartsOf(markdown: string): Quickstart[] {
  const found: Quickstart[] = [];
  const marked = /^<!-- quickstart: (\S+?)(, the store line)? -->\n```[\w-]*\n([\s\S]*?)^```$/gm;
  for (const m of markdown.matchAll(marked)) {
    const body = m[3]!;
    const endLine = markdown.slice(0, m.index + m[0].length).split('\n').length;
    const part = m[2] === undefined ? 'whole' : 'the store line';
    found.push({ file: m[1]!, part, body, lines: body.split('\n').length - 1, endLine });
  }
  return found;
}

const read = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8');

describe("the README's quick starts", () => {
  const quickstarts = quickstartsOf(README);

  it('finds the Express program and the gateway, Redis and overload configs', () => {
    assert.deepEqual(
      quickstarts.map((q) => q.file),
      [
        'examples/quickstart/express.ts',
        'examples/quickstart/gateway.yaml',
        'examples/quickstart/gateway-redis.yaml',
        'examples/quickstart/overload.yaml',
      ],
    );
  });

  it('shows each file byte for byte (the Redis config: its store line, the rest as the memory one)', () => {
    for (const q of quickstarts) {
      if (q.part === 'whole') assert.equal(q.body, read(q.file), `README's block for ${q.file}`);
      else assert.ok(read(q.file).split('\n').includes(q.body.trimEnd()), `${q.file} has the line ${q.body}`);
    }
    const memory = read('examples/quickstart/gateway.yaml');
    const storeLine = quickstarts.find((q) => q.part === 'the store line')!.body;
    assert.equal(read('examples/quickstart/gateway-redis.yaml'), memory.replace(/^store: .*\n/m, storeLine));
  });

  it('serves each config with a command the README shows, for the docs test to run', () => {
    for (const q of quickstarts.filter((q) => q.file.endsWith('.yaml')))
      assert.ok(README.includes(`\nfloodgate serve --config ${q.file} `), `a shown command serves ${q.file}`);
  });

  it('keeps the front page short: 250 lines at most, the quick starts within 150, none over 20 lines', () => {
    assert.ok(README.split('\n').length <= 251, `README.md has ${README.split('\n').length - 1} lines`);
    for (const q of quickstarts) {
      assert.ok(q.endLine <= 150, `${q.file}'s block ends on line ${q.endLine}`);
      assert.ok(q.lines <= 20, `${q.file}'s block has ${q.lines} lines`);
    }
  });
});
