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
 * Each run starts one gateway (one route, one rule) on free loopback ports in front of an upstream
 * in this process, polls the route every 5 ms from the moment of the spawn, and reads /proc (Linux
 * only) for the process tree, the CPU time it used until that 200 (user + system, the figure to
 * trust on a busy machine) and VmRSS. Figures are medians over the runs. Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/startup.ts [--runs 5] [--installed DIR]
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { installAll } from '../packages/server/test/package/support/install.js';
import { closedPort } from '../packages/server/test/support/ports.js';

const SERVER_DIR = new URL('../packages/server/', import.meta.url).pathname;
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

async function startOnce(command: readonly string[], cwd: string, upstream: string): Promise<Sample> {
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-startup-'));
  const port = await closedPort();
  let adminPort = await closedPort();
  while (adminPort === port) adminPort = await closedPort();
  const configFile = join(dir, 'floodgate.yaml');
  await writeFile(
    configFile,
    `listen: { host: 127.0.0.1, port: ${port} }\nadmin: { host: 127.0.0.1, port: ${adminPort} }\nstore: { type: memory }\nroutes:\n  - name: api\n    match: { path: /api/* }\n    upstream: ${upstream}\n    rules:\n      - name: per-client\n        policy: { algorithm: tokenBucket, capacity: 1000, refillPerSecond: 1000 }\n`,
  );
  const started = performance.now();
  const child = spawn(command[0]!, [...command.slice(1), 'serve', '--config', configFile, '--no-watch'], {
    cwd,
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    while ((await status(`http://127.0.0.1:${port}/api/hello`)) !== 200) {
      if (child.exitCode !== null || performance.now() - started > START_TIMEOUT_MS)
        throw new Error(`${command.join(' ')} did not answer 200`);
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

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, installed: { type: 'string' } } });
  const runs = Number(values.runs);
  const upstream = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const install = values.installed === undefined ? await installAll() : undefined;
  const appDir = values.installed ?? install!.appDir;
  const subjects: [string, string[], string][] = [
    ['installed', [join(appDir, 'node_modules', '.bin', 'floodgate')], appDir],
  ];
  if (existsSync(join(SERVER_DIR, 'dist')))
    console.log('dev: skipped (packages/server/dist exists, so the bin would run it)');
  else subjects.push(['dev', [process.execPath, join(SERVER_DIR, 'bin', 'floodgate.js')], SERVER_DIR]);
  console.log(`runs: ${runs}; figures are medians\n\nsubject     first 200   CPU to it   processes   RSS after start`);
  const medians = new Map<string, number>();
  const samples = new Map<string, Sample[]>(subjects.map(([name]) => [name, []]));
  try {
    // Subjects alternate run by run, so that a busier moment of the machine falls on both.
    for (let i = 0; i < runs; i++)
      for (const [name, command, cwd] of subjects) samples.get(name)!.push(await startOnce(command, cwd, origin));
    for (const [name, of] of samples) {
      const ms = median(of.map((s) => s.firstOkMs));
      medians.set(name, ms);
      const line = `${name.padEnd(10)}  ${`${(ms / 1000).toFixed(3)} s`.padStart(9)}   ${`${(median(of.map((s) => s.cpuMs)) / 1000).toFixed(2)} s`.padStart(9)}   ${String(median(of.map((s) => s.processes))).padStart(9)}   ${median(
        of.map((s) => s.rssMb),
      )
        .toFixed(0)
        .padStart(8)} MB`;
      console.log(line);
    }
    if (medians.has('dev'))
      console.log(
        `\ndev / installed, time to the first 200: ${(medians.get('dev')! / medians.get('installed')!).toFixed(2)}x`,
      );
  } finally {
    upstream.close();
    if (install !== undefined) await rm(install.root, { recursive: true, force: true });
  }
}

await main();
