/**
 * The library's hot paths in CPU instructions per decision, counted by valgrind's callgrind: the
 * hot-key cases of `npm run bench` (the same subjects, `bench/subjects/`), as a figure that a
 * busy machine does not move.
 *
 * Each case (subject, path, regime) runs in its own Node process under callgrind with
 * instrumentation off. The process builds the case's loop and waits on stdin; this process asks
 * it for `--warmup` decisions (V8 compiles what it will), turns instrumentation on, asks for
 * `--settle` more uncounted, then counts `--windows` windows of `--decisions` decisions each
 * (counters zeroed before and dumped after each). The least window is printed, in instructions
 * per decision, with the spread of the windows, and floodgate's ratio to the Map bucket on the
 * same path and regime (Map ÷ floodgate, so above 1 means floodgate does less): the Map bucket
 * answering a boolean, and the same bucket answering a decision's fields (`map-decision`). Garbage made in
 * a window is collected in it, so its cost is counted. The loop's own work (the `for`, the
 * `await` of the Promise path) is in both sides' counts. Nothing is asserted.
 *
 * Under callgrind the clock advances about 50 times faster per decision than it does natively,
 * so each millisecond holds fewer decisions: the refusal a store shares within one millisecond
 * is built again about every 200 decisions instead of every 10,000. The counts stay comparable
 * between subjects, which run under the same slowdown.
 *
 *   node --conditions=floodgate-source --import tsx bench/library-instructions.ts [--decisions 100000]
 *        [--windows 4] [--warmup 400000] [--settle 200000] [filter...]
 */
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { loadSubject } from './subjects/index.js';
import type { Path, Regime } from './support/types.js';

const run = promisify(execFile);
const SELF = fileURLToPath(import.meta.url);
const CHILD_FLAGS = ['--predictable', '--conditions=floodgate-source', '--import', 'tsx'];

/** The cases, in the order printed: each floodgate case follows its two Map peers (a boolean, a decision). */
const CASES: readonly (readonly [subject: string, path: Path, regime: Regime])[] = (
  ['sync', 'promise'] as const
).flatMap((path) =>
  (['admit', 'reject'] as const).flatMap((regime) =>
    ['map', 'map-decision', 'floodgate'].map((subject) => [subject, path, regime] as const),
  ),
);

/** The child: build one case's loop, then run `n` decisions for each number read on stdin. */
async function serveCase(id: string): Promise<void> {
  const [subjectId, path, regime] = id.split('/') as [string, Path, Regime];
  const build = (await loadSubject(subjectId)).hotKey[path];
  if (build === undefined) throw new Error(`${subjectId} has no ${path} path`);
  const loop = build(regime);
  console.log('ready');
  for await (const line of createInterface({ input: process.stdin })) {
    const n = Number(line);
    const admitted = await loop(n);
    console.log(JSON.stringify({ admitted }));
  }
}

interface Windows {
  readonly warmup: number;
  readonly settle: number;
  readonly windows: number;
  readonly decisions: number;
}

/** Counts one case under callgrind: instructions per decision in each window. */
async function measure(id: string, o: Windows): Promise<number[]> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-library-callgrind-'));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dir, 'cg.%p')}`,
      process.execPath,
      ...CHILD_FLAGS,
      SELF,
      '--case',
      id,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const { value, done } = await lines.next();
    if (done === true) throw new Error(`${id}: the child exited early`);
    return value as string;
  };
  const decide = async (n: number): Promise<number> => {
    child.stdin.write(`${n}\n`);
    return (JSON.parse(await next()) as { admitted: number }).admitted;
  };
  const control = (...args: string[]): Promise<unknown> =>
    run('callgrind_control', [...args, String(child.pid)], { timeout: 60_000 });
  try {
    await next(); // ready
    await decide(o.warmup);
    await control('--instr=on');
    await decide(o.settle);
    const counts: number[] = [];
    for (let w = 0; w < o.windows; w++) {
      await control('--zero');
      const admitted = await decide(o.decisions);
      await control('--dump');
      const expected = id.endsWith('/admit') ? o.decisions : 0;
      if (admitted !== expected) throw new Error(`${id}: ${admitted} of ${o.decisions} admitted, not ${expected}`);
      const dump = await readFile(join(dir, `cg.${child.pid}.${w + 1}`), 'utf8');
      const summary = /^summary: (\d+)$/m.exec(dump);
      if (summary === null) throw new Error(`${id}: no summary line in callgrind's dump`);
      counts.push(Number(summary[1]) / o.decisions);
    }
    return counts;
  } finally {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      decisions: { type: 'string', default: '100000' },
      windows: { type: 'string', default: '4' },
      warmup: { type: 'string', default: '400000' },
      settle: { type: 'string', default: '200000' },
    },
  });
  const o: Windows = {
    decisions: Number(values.decisions),
    windows: Number(values.windows),
    warmup: Number(values.warmup),
    settle: Number(values.settle),
  };
  const ids = CASES.map((c) => c.join('/')).filter(
    (id) => positionals.length === 0 || positionals.some((p) => id.includes(p)),
  );
  const least = new Map<string, number>();
  console.log(
    `${'case'.padEnd(32)}${'instructions/decision'.padStart(22)}  ${'windows'.padEnd(14)}Map ÷ this  Map decision ÷ this`,
  );
  for (const id of ids) {
    const counts = await measure(id, o);
    const min = Math.min(...counts);
    least.set(id, min);
    const vs = (peer: string): string => {
      const count = least.get(id.replace(/^floodgate/, peer));
      return id.startsWith('floodgate/') && count !== undefined ? (count / min).toFixed(3) : '';
    };
    const spread = `${Math.round(min)}-${Math.round(Math.max(...counts))}`;
    console.log(
      `${id.padEnd(32)}${String(Math.round(min)).padStart(22)}  ${spread.padEnd(14)}${vs('map').padEnd(12)}${vs('map-decision')}`,
    );
  }
}

const caseIndex = process.argv.indexOf('--case');
if (caseIndex >= 0) await serveCase(process.argv[caseIndex + 1]!);
else await main();
