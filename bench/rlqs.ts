/**
 * RLQS benchmark: 1,000 data-plane streams x 10 buckets, each stream reporting every second, against
 * one `floodgate ratelimit` process, first on the memory ledger, then on Redis (the ledger script
 * per report). The streams are multiplexed: 4 client processes of 250 streams each, over 10 grpc-js
 * channels per process (so 40 HTTP/2 connections carry the 1,000 streams; Envoys would each open
 * one). Every stream reports the same 10 buckets, so each bucket is shared by 1,000 clients.
 *
 * Measured over the window after the streams have joined and the pushes their joins caused have
 * stopped (no push for 2 s in any client process), so the window holds the steady state: the server's CPU-seconds (from /proc,
 * user + system) per second of the window, as a percentage of one core, and per report; the delay
 * from a report's write to its answer at the client (p50, p99, max), which includes the client
 * processes' own event-loop delays on a shared machine (their p99 is printed beside it); on Redis,
 * redis-server's CPU-seconds in the window too (not in the server's figures). Nothing is
 * pinned: on a shared machine a pinned process gets only what its core has left. Prints figures; nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/rlqs.ts [--seconds 20] [--memory-only | --redis-only] [--cpu-prof-dir DIR]
 *
 * `--cpu-prof-dir` writes the server's V8 CPU profile there (node's --cpu-prof) when it stops.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';
import { cpuTicks, TICK_US } from './gateway/measure.js';
import { table } from './support/format.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    'memory-only': { type: 'boolean' },
    'redis-only': { type: 'boolean' },
    'cpu-prof-dir': { type: 'string' },
  },
});
const SECONDS = Number(values.seconds ?? 20);
const SETTLE_SECONDS = 3;
const PROCESSES = 4;
const STREAMS_PER_PROCESS = 250;
const CHANNELS_PER_PROCESS = 10;
const BUCKETS = 10;
const CONFIG = `domain: bench
quota:
  buckets:
    - bucket: { name: "*" }
      token_bucket: { max_tokens: 200000, tokens_per_fill: 100000, fill_interval_seconds: 1 }
      assignment_ttl_seconds: 10
`;

interface ClientResult {
  readonly delays: number[];
  /** Reports answered in the window (an answer merged from several covers each of them). */
  readonly answers: number;
  readonly pushes: number;
  readonly failures: number;
  /** The client process's own event-loop delay, p99 over the window, in ms. */
  readonly lagP99Ms: number;
}

interface Clients {
  /** ready resolves once every stream of every process has had its first answer and the joins' pushes have stopped. */
  readonly ready: Promise<void>;
  go(): void;
  readonly results: Promise<ClientResult[]>;
  kill(): void;
}

function runClients(port: number): Clients {
  const children = Array.from({ length: PROCESSES }, () => {
    const script = join(import.meta.dirname, 'rlqs-clients.ts');
    const counts = [port, STREAMS_PER_PROCESS, CHANNELS_PER_PROCESS, BUCKETS, SECONDS].map(String);
    const args = ['--conditions=floodgate-source', '--import', 'tsx', script, ...counts];
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    let readyNow: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (readyNow = resolve));
    const result = new Promise<ClientResult>((resolve, reject) => {
      lines.on('line', (line) => (line === 'ready' ? readyNow() : resolve(JSON.parse(line) as ClientResult)));
      child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`client exited ${String(code)}`))));
    });
    return { child, ready, result };
  });
  return {
    ready: Promise.all(children.map((c) => c.ready)).then(() => undefined),
    go: () => children.forEach((c) => c.child.stdin!.write('go\n')),
    results: Promise.all(children.map((c) => c.result)),
    kill: () => children.forEach((c) => c.child.kill('SIGKILL')),
  };
}

async function startServer(
  configPath: string,
  redisPort: number | undefined,
): Promise<{ pid: number; port: number; stop: () => Promise<void> }> {
  const main = join(import.meta.dirname, '../packages/server/src/cli/ratelimit-main.ts');
  const args = [
    ...(values['cpu-prof-dir'] === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof-dir']]),
    '--conditions=floodgate-source',
    '--import',
    'tsx',
    main,
    '--config',
    configPath,
    '--grpc-port',
    '0',
    '--http-port',
    '0',
    '--no-watch',
  ];
  if (redisPort !== undefined) args.push('--redis', `127.0.0.1:${redisPort}`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  const { grpcPort } = JSON.parse(line) as { grpcPort: number };
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    port: grpcPort,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** redisPidOf returns the pid of the redis-server on `port` (it names itself `redis-server 127.0.0.1:port`), or undefined. */
function redisPidOf(port: number): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith(`redis-server 127.0.0.1:${port}`))
        return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

async function measure(name: string, configPath: string, redisPort: number | undefined): Promise<string[]> {
  const server = await startServer(configPath, redisPort);
  const clients = runClients(server.port);
  const redisPid = redisPort === undefined ? undefined : redisPidOf(redisPort);
  try {
    await clients.ready;
    // A few seconds for the joins' redistributions to settle before the window opens.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
    clients.go();
    const before = cpuTicks(server.pid);
    const redisBefore = redisPid === undefined ? 0 : cpuTicks(redisPid);
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    const cpuSeconds = ((cpuTicks(server.pid) - before) * TICK_US) / 1e6;
    const redisSeconds = redisPid === undefined ? undefined : ((cpuTicks(redisPid) - redisBefore) * TICK_US) / 1e6;
    const results = await clients.results;
    return row(name, { cpuSeconds, redisSeconds }, results);
  } finally {
    clients.kill();
    await server.stop();
  }
}

function row(
  name: string,
  cpu: { readonly cpuSeconds: number; readonly redisSeconds: number | undefined },
  results: readonly ClientResult[],
): string[] {
  const { cpuSeconds, redisSeconds } = cpu;
  const delays = results.flatMap((r) => r.delays).sort((a, b) => a - b);
  const answers = results.reduce((s, r) => s + r.answers, 0);
  return [
    name,
    `${((100 * cpuSeconds) / SECONDS).toFixed(1)}%`,
    cpuSeconds.toFixed(2),
    ((cpuSeconds * 1e6) / Math.max(1, answers)).toFixed(0),
    redisSeconds === undefined ? '-' : redisSeconds.toFixed(2),
    String(answers),
    String(delays.length),
    quantile(delays, 0.5).toFixed(1),
    quantile(delays, 0.99).toFixed(1),
    (delays.at(-1) ?? NaN).toFixed(1),
    String(results.reduce((s, r) => s + r.pushes, 0)),
    String(results.reduce((s, r) => s + r.failures, 0)),
    Math.max(...results.map((r) => r.lagP99Ms)).toFixed(1),
  ];
}

const dir = mkdtempSync(join(tmpdir(), 'rlqs-bench-'));
const configPath = join(dir, 'rlqs.yaml');
writeFileSync(configPath, CONFIG);
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const rows: string[][] = [];
if (values['redis-only'] !== true) rows.push(await measure('memory ledger', configPath, undefined));
if (values['memory-only'] !== true) {
  const redis = await startRedisServer();
  try {
    rows.push(await measure('Redis ledger', configPath, redis.ports[0]!));
  } finally {
    await redis.stop();
  }
}
process.stdout.write(
  `RLQS: ${PROCESSES * STREAMS_PER_PROCESS} streams x ${BUCKETS} buckets, one report per stream per second, ${SECONDS} s measured once every stream had its first answer, no push had come for 2 s, and ${SETTLE_SECONDS} s more; ${PROCESSES} client processes x ${CHANNELS_PER_PROCESS} channels; load average ${load()}\n`,
);
process.stdout.write(
  table(
    [
      'ledger',
      'server CPU (1 core)',
      'CPU-s',
      'CPU-µs/report',
      'redis-server CPU-s',
      'reports answered',
      'delays measured',
      'p50 ms',
      'p99 ms',
      'max ms',
      'pushes',
      'stream errors',
      'client loop lag p99 ms',
    ],
    rows,
    new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
  ) + '\n',
);
