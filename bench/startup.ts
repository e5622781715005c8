/**
 * Startup benchmark of the `floodgate` command: the time from spawning `floodgate serve` to its
 * first proxied 200, how many processes it runs in, and their resident memory just after that
 * 200, for two ways of running it:
 *
 * - `installed`: the three packages packed and installed with production dependencies only (as
 *   packages/server/test/package/install.test.ts does; or `--installed DIR`, an app folder where
 *   that was done), whose bin imports the built JavaScript in its own process;
 * - `dev`: the checkout's `packages/server/bin/floodgate.js` with no `dist/` (what `npm start`
 *   runs after `npm ci`), which runs the TypeScript through tsx in a child process. Skipped when
 *   the checkout has a build, since the bin would then run that.
 *
 * and, in the same runs, its peer:
 *
 * - `undici peer`: bench/gateway/undici-peer.ts (node:http and one undici Pool, the same forwarding
 *   and RateLimit headers from a Map token bucket), bundled by esbuild into one file with the same
 *   undici parts the gateway's bundle carries (packages/server/src/undici-pool.ts): what starting a
 *   hand-written proxy costs on this node.
 *
 * Node reads the certificates of `NODE_EXTRA_CA_CERTS` at every start, before any of a program's
 * code: with a distribution's whole bundle (/etc/ssl/certs/ca-certificates.crt, about 150
 * certificates) that is some 400 M instructions, several times what node needs otherwise. Where the
 * variable is set, every subject also runs without it (`, no extra CAs`), the environment of a server
 * that does not set it.
 *
 * Each run starts one gateway (one route, one rule) on free loopback ports in front of an upstream
 * in this process, polls the route every 5 ms from the moment of the spawn, and reads /proc (Linux
 * only) for the process tree, the CPU time it used until that 200 (user + system, the figure to
 * trust on a busy machine) and VmRSS. Figures are medians over the runs; each subject's ratio to
 * the undici peer in the same environment is the median of the runs' ratios. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/startup.ts [--runs 5] [--installed DIR] [--workers 2]
 *
 * With `--workers N`, the installed command also runs with `--workers N` (a primary and N workers
 * of node's cluster module): its first 200 needs every worker listening, and its RSS is the tree's.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { installAll } from '../packages/server/test/package/support/install.js';
import { closedPort } from '../packages/server/test/support/ports.js';

const SERVER_DIR = new URL('../packages/server/', import.meta.url).pathname;
const BENCH_DIR = new URL('.', import.meta.url).pathname;
const POLL_MS = 5;
const START_TIMEOUT_MS = 20_000;

/** Sample is one start: milliseconds to the first 200 (wall and the tree's CPU), processes in the tree, their summed RSS in MB. */
interface Sample {
  readonly firstOkMs: number;
  readonly cpuMs: number;
  readonly processes: number;
  readonly rssMb: number;
}

/** descendants returns `pid` and every process below it, from each process's parent in /proc. */
function processTree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // It exited while we looked.
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

/** CLOCK_TICKS_PER_SECOND is Linux's USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on every common build). */
const CLOCK_TICKS_PER_SECOND = 100;

/** cpuMs returns the user and system time `pid` has used, from /proc (less sensitive to a busy machine than wall time). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

function rssKb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]);
}

/** status resolves with the status of GET `url` on a fresh connection, or 0 when it cannot connect. */
function status(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

/** Subject is a way of starting a proxy: its command for a port and the upstream, where it runs, and its environment. */
interface Subject {
  readonly name: string;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** argv returns the command that serves `/api/*` on `port` in front of `upstreamPort` (`dir` is the run's own folder). */
  argv(port: number, upstreamPort: number, dir: string): Promise<string[]>;
}

/** floodgate returns a subject running `command` as `floodgate serve` with one route and one rule. */
function floodgate(
  name: string,
  command: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  extra: readonly string[] = [],
): Subject {
  return {
    name,
    env,
    cwd,
    async argv(port, upstreamPort, dir) {
      let adminPort = await closedPort();
      while (adminPort === port) adminPort = await closedPort();
      const configFile = join(dir, 'floodgate.yaml');
      await writeFile(
        configFile,
        `listen: { host: 127.0.0.1, port: ${port} }\nadmin: { host: 127.0.0.1, port: ${adminPort} }\nstore: { type: memory }\nroutes:\n  - name: api\n    match: { path: /api/* }\n    upstream: http://127.0.0.1:${upstreamPort}\n    rules:\n      - name: per-client\n        policy: { algorithm: tokenBucket, capacity: 1000, refillPerSecond: 1000 }\n`,
      );
      return [...command, 'serve', '--config', configFile, '--no-watch', ...extra];
    },
  };
}

/** The undici peer's entry point: `node peer.js <port> <upstreamPort>`. */
const PEER_ENTRY = `import { undiciPeer } from ${JSON.stringify(join(BENCH_DIR, 'gateway', 'undici-peer.ts'))};
const [port, upstreamPort] = process.argv.slice(2).map(Number);
undiciPeer({ upstreamPort, capacity: 1000, refillPerSecond: 1000 }).listen(port, '127.0.0.1');
`;

/** bundlePeer writes the undici peer as one ES module in `dir`, its undici the gateway bundle's parts, and returns its path. */
async function bundlePeer(dir: string): Promise<string> {
  const entry = join(dir, 'peer-entry.ts');
  await writeFile(entry, PEER_ENTRY);
  const outfile = join(dir, 'peer.mjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile,
    plugins: [
      {
        name: 'undici-pool',
        setup: (b) => b.onResolve({ filter: /^undici$/ }, () => ({ path: join(SERVER_DIR, 'src', 'undici-pool.ts') })),
      },
    ],
    nodePaths: [join(SERVER_DIR, '..', '..', 'node_modules')],
    banner: { js: "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return outfile;
}

/** peer returns the undici peer's subject, from its bundle at `file`. */
function peer(name: string, file: string, env: NodeJS.ProcessEnv): Subject {
  return {
    name,
    env,
    cwd: dirname(file),
    argv: (port, upstreamPort) => Promise.resolve([process.execPath, file, String(port), String(upstreamPort)]),
  };
}

async function startOnce(subject: Subject, upstreamPort: number): Promise<Sample> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-startup-'));
  const port = await closedPort();
  const [command, ...args] = await subject.argv(port, upstreamPort, dir);
  const started = performance.now();
  const child = spawn(command!, args, { cwd: subject.cwd, env: subject.env, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    while ((await status(`http://127.0.0.1:${port}/api/hello`)) !== 200) {
      if (child.exitCode !== null || performance.now() - started > START_TIMEOUT_MS)
        throw new Error(`${subject.name}: ${[command, ...args].join(' ')} did not answer 200`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const firstOkMs = performance.now() - started;
    const tree = processTree(child.pid!);
    return {
      firstOkMs,
      cpuMs: tree.reduce((sum, pid) => sum + cpuMs(pid), 0),
      processes: tree.length,
      rssMb: tree.reduce((sum, pid) => sum + rssKb(pid), 0) / 1024,
    };
  } finally {
    child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** withoutExtraCas returns `env` without NODE_EXTRA_CA_CERTS. */
function withoutExtraCas(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _, ...rest } = env;
  return rest;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(3)} s`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '5' }, installed: { type: 'string' }, workers: { type: 'string' } },
  });
  const runs = Number(values.runs);
  const upstream = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const install = values.installed === undefined ? await installAll() : undefined;
  const appDir = values.installed ?? install!.appDir;
  const peerDir = await mkdtemp(join(tmpdir(), 'floodgate-startup-peer-'));
  const peerFile = await bundlePeer(peerDir);
  const installedBin = [join(appDir, 'node_modules', '.bin', 'floodgate')];
  const envs: [string, NodeJS.ProcessEnv][] = [['', process.env]];
  if (process.env['NODE_EXTRA_CA_CERTS'] !== undefined) envs.push([', no extra CAs', withoutExtraCas(process.env)]);
  // Each environment's peer first: the ratios are to it.
  const subjects: Subject[] = envs.flatMap(([suffix, env]) => [
    peer(`undici peer${suffix}`, peerFile, env),
    floodgate(`installed${suffix}`, installedBin, appDir, env),
    ...(values.workers === undefined
      ? []
      : [
          floodgate(`installed, ${values.workers} workers${suffix}`, installedBin, appDir, env, [
            '--workers',
            values.workers,
          ]),
        ]),
  ]);
  if (existsSync(join(SERVER_DIR, 'dist')))
    console.log('dev: skipped (packages/server/dist exists, so the bin would run it)');
  else
    subjects.push(
      floodgate('dev', [process.execPath, join(SERVER_DIR, 'bin', 'floodgate.js')], SERVER_DIR, process.env),
    );
  if (process.env['NODE_EXTRA_CA_CERTS'] !== undefined)
    console.log(`NODE_EXTRA_CA_CERTS=${process.env['NODE_EXTRA_CA_CERTS']}: read by node at every start`);
  console.log(
    `runs: ${runs}; figures are medians\n\n${'subject'.padEnd(28)}first 200   CPU to it   processes   RSS after start   first 200 / peer's`,
  );
  const samples = new Map<Subject, Sample[]>(subjects.map((subject) => [subject, []]));
  try {
    // Subjects alternate run by run, so that a busier moment of the machine falls on all of them.
    for (let i = 0; i < runs; i++)
      for (const subject of subjects) samples.get(subject)!.push(await startOnce(subject, upstreamPort));
    for (const [subject, of] of samples) {
      const peerOf = subjects.find((s) => s.name.startsWith('undici peer') && s.env === subject.env)!;
      const ratios = of.map((s, i) => s.firstOkMs / samples.get(peerOf)![i]!.firstOkMs);
      const line =
        `${subject.name.padEnd(28)}${seconds(median(of.map((s) => s.firstOkMs))).padStart(9)}   ` +
        `${`${(median(of.map((s) => s.cpuMs)) / 1000).toFixed(2)} s`.padStart(9)}   ` +
        `${String(median(of.map((s) => s.processes))).padStart(9)}   ` +
        `${`${median(of.map((s) => s.rssMb)).toFixed(0)} MB`.padStart(15)}   ${`${median(ratios).toFixed(2)}x`.padStart(18)}`;
      console.log(line);
    }
  } finally {
    upstream.close();
    await rm(peerDir, { recursive: true, force: true });
    if (install !== undefined) await rm(install.root, { recursive: true, force: true });
  }
}

await main();
