/**
 * The gateway benchmark's proxies in instructions per request, counted by valgrind's callgrind:
 * the figure a busy machine does not move, beside `npm run bench:gateway`'s CPU time and
 * requests/s, which it does. The same cells (bench/gateway/cells.ts: floodgate with no rules,
 * one and three rules on the memory store, its refusal; the undici peer with the same headers and
 * its refusal; the bare undici proxy), each run under callgrind in turn with the upstream outside
 * it; one keep-alive connection sends requests one at a time (bench/callgrind.ts: a warm-up,
 * uncounted requests once counting is on, then counted windows; the least window is the figure).
 * Only the proxy's user-space instructions count, not the kernel's socket work: the ratio is what
 * the proxy's own code costs. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/gateway-instructions.ts [--requests 2000]
 *        [--windows 3] [--warmup 6000] [--settle 4000] [--parallel 2] [--only name,name]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countInstructions, inParallel, type CallgrindSubject } from './callgrind.js';
import { BUCKET, CELLS, floodgateYaml, type CellSpec } from './gateway/cells.js';
import { portOf, startProcess } from './gateway/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS = join(ROOT, 'bench', 'gateway', 'peers.ts');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
const SOURCE = ['--conditions=floodgate-source', '--import', 'tsx'];
/** The cells counted by default: those on the memory store that a single connection exercises the same way. */
const DEFAULT = ['undici-bare', 'undici', 'floodgate-none', 'floodgate', 'floodgate-3', 'undici-429', 'floodgate-429'];

async function subjectOf(spec: CellSpec, dir: string, upstreamPort: number): Promise<CallgrindSubject> {
  const status = spec.case === 'admit' ? 200 : 429;
  const base = { name: spec.name, portOf, path: '/bench', status };
  if (spec.kind === 'floodgate') {
    const file = join(dir, `${spec.name}.yaml`);
    await writeFile(file, floodgateYaml(spec, upstreamPort, undefined));
    const args = ['serve', '--config', file, '--port', '0', '--no-watch'];
    return { ...base, command: [process.execPath, '--predictable', ...SOURCE, MAIN, ...args] };
  }
  const bucket = spec.kind === 'undici-bare' ? { capacity: 0, refillPerSecond: 1 } : BUCKET[spec.case];
  const kind = spec.kind === 'undici-bare' ? 'undici' : spec.kind;
  const args = ['--serve', kind, '--upstream-port', String(upstreamPort), '--capacity', String(bucket.capacity)];
  args.push('--refill-per-second', String(bucket.refillPerSecond));
  return { ...base, command: [process.execPath, '--predictable', ...SOURCE, PEERS, ...args] };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '2000' },
      windows: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '6000' },
      settle: { type: 'string', default: '4000' },
      parallel: { type: 'string', default: '2' },
      only: { type: 'string' },
    },
  });
  const names = values.only?.split(',') ?? DEFAULT;
  const specs = CELLS.filter((s) => names.includes(s.name) && s.kind !== 'nginx' && s.kind !== 'fastify');
  const o = {
    requests: Number(values.requests),
    windows: Number(values.windows),
    warmup: Number(values.warmup),
    settle: Number(values.settle),
  };
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-gwi-'));
  const upstream = await startProcess('upstream', undefined, process.execPath, [
    ...SOURCE,
    PEERS,
    '--serve',
    'upstream',
  ]);
  const results = new Map<string, number>();
  try {
    await inParallel(specs, Number(values.parallel), async (spec) => {
      const windows = await countInstructions(await subjectOf(spec, dir, upstream.port), o);
      results.set(spec.name, Math.min(...windows));
      console.error(`${spec.name.padEnd(16)} ${windows.map((w) => Math.round(w)).join(' ')} instructions/request`);
    });
  } finally {
    upstream.child.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
  console.log(['cell', 'instructions/req (least window)', '÷ its peer', 'what it does'].join('\t'));
  for (const spec of specs) {
    const peer = results.get(spec.case === 'admit' ? 'undici' : 'undici-429');
    const it = results.get(spec.name)!;
    const ratio = peer === undefined ? '-' : (it / peer).toFixed(3);
    console.log([spec.name, Math.round(it), ratio, spec.does].join('\t'));
  }
  console.log('\n"÷ its peer": to the undici peer with the same headers (admitted) or its 429 (refused).');
}

await main();
