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
 * The Redis cells (`floodgate-redis`, `floodgate-redis-3`, `floodgate-redis-429`) each talk to a
 * redis-server of their own that the run starts, outside the counted process; each is printed beside its twin on the
 * memory store, with the script calls (EVALSHA and EVAL, Redis's round trips) per request over the
 * whole run. With `--in-flight N` each cell gets N requests at once over N connections, so that
 * what arrives together is decided together (the Redis store sends one script per tick): one at a
 * time, every decision on Redis is a script of its own.
 *
 *   node --conditions=floodgate-source --import tsx bench/gateway-instructions.ts [--requests 2000]
 *        [--windows 3] [--warmup 6000] [--settle 4000] [--parallel 2] [--in-flight 1] [--only name,name]
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countInstructions, inParallel, type CallgrindSubject } from './callgrind.js';
import { BUCKET, CELLS, REDIS_TWINS, floodgateYaml, type CellSpec } from './gateway/cells.js';
import { commandStats } from './gateway/measure.js';
import { portOf, startProcess, startRedis, type RedisServer } from './gateway/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS = join(ROOT, 'bench', 'gateway', 'peers.ts');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
const SOURCE = ['--conditions=floodgate-source', '--import', 'tsx'];
/** The cells counted by default: those on the memory store that a single connection exercises the same way. */
const DEFAULT = ['undici-bare', 'undici', 'floodgate-none', 'floodgate', 'floodgate-3', 'undici-429', 'floodgate-429'];

/** The gateway's client timeouts, lifted for a process that runs tens of times slower than usual. */
const SLOW_LIMITS = 'limits: { headersTimeoutMs: 600000, requestTimeoutMs: 600000 }\n';

async function subjectOf(
  spec: CellSpec,
  dir: string,
  upstreamPort: number,
  redisPort: number | undefined,
): Promise<CallgrindSubject> {
  const status = spec.case === 'admit' ? 200 : 429;
  const base = { name: spec.name, portOf, path: '/bench', status };
  if (spec.kind === 'floodgate') {
    const file = join(dir, `${spec.name}.yaml`);
    // Under callgrind a request waits tens of times longer than it would: the client-side
    // timeouts are lifted, so that a slow turn is counted instead of answered 408.
    await writeFile(file, `${floodgateYaml(spec, upstreamPort, redisPort)}${SLOW_LIMITS}`);
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
      'in-flight': { type: 'string', default: '1' },
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
    inFlight: Number(values['in-flight']),
  };
  const sent = 1 + o.warmup + o.settle + o.windows * o.requests;
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-gwi-'));
  const upstream = await startProcess('upstream', undefined, process.execPath, [
    ...SOURCE,
    PEERS,
    '--serve',
    'upstream',
  ]);
  const results = new Map<string, number>();
  /** Script calls (Redis round trips) per request of each Redis cell, over its whole run. */
  const scripts = new Map<string, number>();
  try {
    await inParallel(specs, Number(values.parallel), async (spec) => {
      const redis = spec.floodgate?.redis === true ? await redisFor(spec, dir) : undefined;
      try {
        const windows = await countInstructions(await subjectOf(spec, dir, upstream.port, redis?.port), o);
        results.set(spec.name, Math.min(...windows));
        if (redis !== undefined) scripts.set(spec.name, scriptCalls(redis.port) / sent);
        console.error(`${spec.name.padEnd(16)} ${windows.map((w) => Math.round(w)).join(' ')} instructions/request`);
      } finally {
        redis?.child.kill('SIGTERM');
      }
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
  printRedis(results, scripts, o.inFlight);
}

/** A redis-server of the cell's own (its directory under `dir`), outside the counted process. */
async function redisFor(spec: CellSpec, dir: string): Promise<RedisServer> {
  const own = join(dir, `${spec.name}-redis`);
  await mkdir(own);
  const redis = await startRedis(own, undefined);
  if (redis === undefined) throw new Error(`${spec.name} needs redis-server (apt-get install -y redis-server)`);
  return redis;
}

/** The script calls (EVALSHA and EVAL) the redis-server on `port` has run. */
function scriptCalls(port: number): number {
  const calls = commandStats(port);
  return (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
}

/** Prints each Redis cell counted beside its memory-store twin, with its script calls per request. */
function printRedis(
  results: ReadonlyMap<string, number>,
  scripts: ReadonlyMap<string, number>,
  inFlight: number,
): void {
  const present = REDIS_TWINS.filter(([r]) => results.has(r));
  if (present.length === 0) return;
  console.log(`\nRedis (${inFlight} in flight): the gateway on Redis ÷ the same rules on the memory store`);
  console.log(['cell', 'instructions/req', '÷ memory twin', 'scripts/request (whole run)'].join('\t'));
  for (const [redis, memory] of present) {
    const it = results.get(redis)!;
    const twin = results.get(memory);
    const ratio = twin === undefined ? '-' : (it / twin).toFixed(3);
    console.log([redis, Math.round(it), ratio, scripts.get(redis)?.toFixed(3) ?? '-'].join('\t'));
  }
}

await main();
