/**
 * The HTTP layer's cost per request in CPU instructions, counted by valgrind's callgrind: a figure
 * that a busy machine does not move, beside bench/http.ts's requests/s, which it does.
 *
 * Each server of bench/http.ts (its `--serve` mode: bare, floodgate, floodgate with the draft
 * headers off, a no-op middleware, the framework's own rate-limit peer, and `fixed`: a middleware
 * that sets the two draft headers to constants, the least any limiter that writes them can cost;
 * `counting`: floodgate with `remaining` counting down on every request, and `floor`: the same two
 * headers with the same changing values and no limiter; `refused`: floodgate refusing every request
 * after the first with a 429, the refused path) runs under callgrind with instrumentation off. One keep-alive connection sends `--warmup`
 * requests so that V8 has compiled what it will; then instrumentation goes on, `--settle` more
 * requests pass uncounted, and `--windows` windows of `--requests` requests each are counted
 * (counters zeroed before and dumped after each window, requests sent one at a time). It prints
 * each cell's least window in instructions per request, the spread of its windows, and each
 * subject's ratio to the bare framework's (by least windows). Only the server's own user-space
 * instructions count: not the kernel's socket work and not the client's, so the ratio is what the
 * server's CPU spends, not the requests/s a shared machine gives. Nothing is asserted.
 *
 * What moves the count, and what the defaults do about it. Node runs with V8's `--predictable`
 * (compilation and GC on the main thread): otherwise callgrind counts background compilation that
 * its slowness delays into the measured window. For the first several thousand requests after
 * instrumentation goes on, and now and then after (a full GC, timers that fire more often per
 * request when execution is 50 times slower), a window counts 15,000-60,000 more instructions per
 * request, alike for every server; averaged in, this pulls every ratio towards 1 (a 1,000-request
 * settle and one window let it into the figures until 2026-11-22). So `--settle` 8,000 requests
 * pass uncounted, and the least of the windows is taken: the steady cost, which the others exceed
 * only by such additions. The least windows of one server differed by up to 2.5% between runs.
 *
 *   node --conditions=floodgate-source --import tsx bench/http-instructions.ts [--requests 2000] [--windows 3]
 *        [--warmup 6000] [--settle 8000] [--parallel 2] [--subjects bare,counting,floor] [filter...]
 *
 * About 1.5 minutes per server; two run at once by default, so about 25 minutes for all 31.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countInstructions, inParallel, type CallgrindWindows } from './callgrind.js';

const HTTP_BENCH = fileURLToPath(new URL('./http.ts', import.meta.url));
const CHILD_FLAGS = ['--predictable', '--conditions=floodgate-source', '--import', 'tsx'];
/** Each framework's subjects, in the order printed; `peer` only where the framework has one. */
const CELLS: Record<string, readonly string[]> = {
  node: ['bare', 'floodgate', 'quiet', 'noop', 'fixed', 'counting', 'floor', 'refused'],
  express: ['bare', 'floodgate', 'quiet', 'noop', 'fixed', 'peer', 'counting', 'floor', 'refused'],
  fastify: ['bare', 'floodgate', 'quiet', 'noop', 'fixed', 'peer', 'counting', 'floor', 'refused'],
  koa: ['bare', 'floodgate', 'quiet', 'noop', 'fixed', 'counting', 'floor', 'refused'],
  hono: ['bare', 'floodgate', 'quiet', 'noop', 'fixed', 'counting', 'floor', 'refused'],
};

/** Measures one cell (`framework:subject`): instructions per request in each window. */
function measure(cell: string, o: CallgrindWindows): Promise<number[]> {
  return countInstructions(
    {
      name: cell,
      command: [process.execPath, ...CHILD_FLAGS, HTTP_BENCH, '--serve', cell],
      portOf: (out) => {
        const line = out.split('\n').find((l) => l.startsWith('{'));
        return line === undefined ? undefined : (JSON.parse(line) as { port: number }).port;
      },
      path: '/',
      status: cell.endsWith(':refused') ? 429 : 200,
    },
    o,
  );
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      requests: { type: 'string', default: '2000' },
      windows: { type: 'string', default: '4' },
      warmup: { type: 'string', default: '6000' },
      settle: { type: 'string', default: '8000' },
      parallel: { type: 'string', default: '2' },
      subjects: { type: 'string' },
    },
  });
  const only = values.subjects?.split(',');
  if (only !== undefined && !only.includes('bare')) only.push('bare');
  const o = {
    requests: Number(values.requests),
    warmup: Number(values.warmup),
    settle: Number(values.settle),
    windows: Number(values.windows),
  };
  const cells = Object.entries(CELLS)
    .filter(([framework]) => positionals.length === 0 || positionals.some((p) => framework.includes(p)))
    .flatMap(([framework, subjects]) =>
      subjects.filter((s) => only === undefined || only.includes(s)).map((subject) => `${framework}:${subject}`),
    );
  const results = new Map<string, number[]>();
  await inParallel(cells, Number(values.parallel), async (cell) => {
    const windows = await measure(cell, o);
    results.set(cell, windows);
    console.error(`${cell.padEnd(18)} ${windows.map((w) => Math.round(w)).join(' ')} instructions/request`);
  });
  console.log(
    [
      'framework',
      'subject',
      'instructions/req (least window)',
      'all windows',
      '÷ bare',
      'bare ÷ it',
      'floor ÷ it',
    ].join('\t'),
  );
  for (const cell of cells) {
    const [framework, subject] = cell.split(':') as [string, string];
    const bare = Math.min(...results.get(`${framework}:bare`)!);
    const windows = results.get(cell)!;
    const it = Math.min(...windows);
    const floor = subject === 'counting' ? results.get(`${framework}:floor`) : undefined;
    const toFloor = floor === undefined ? '-' : (Math.min(...floor) / it).toFixed(3);
    console.log(
      [
        framework,
        subject,
        Math.round(it),
        `${Math.round(it)}-${Math.round(Math.max(...windows))}`,
        (it / bare).toFixed(3),
        (bare / it).toFixed(3),
        toFloor,
      ].join('\t'),
    );
  }
  console.log(
    '\n"bare ÷ it" is the share of the bare server\'s requests/s a CPU-bound server would keep (least windows);',
  );
  console.log('"floor ÷ it", for counting, the share of its floor\'s (the same changing headers, no limiter).');
}

await main();
