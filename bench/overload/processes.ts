/**
 * The overload bench's processes: the upstream, each lane's `floodgate serve` and the load
 * generator, each a child of its own. With two or more CPUs and `taskset`, the gateway runs on
 * CPU 0 and the upstream and the load generator on CPU 1, so the gateway never takes turns with
 * the traffic it is judged on.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadPlan, LoadRecords } from './load.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '..', '..');
const FLOODGATE = join(ROOT, 'packages', 'server', 'bin', 'floodgate.js');
const TSX_FLAGS = ['--conditions=floodgate-source', '--import', 'tsx'] as const;

let pinning = availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;

/** pinnedToCpus is true when the children are pinned to CPUs (taskset present, 2+ CPUs, not {@link unpin}ned). */
export function pinnedToCpus(): boolean {
  return pinning;
}

/** unpin starts every later child unpinned: the gateway, upstream and load generator share the cores, as a user's would. */
export function unpin(): void {
  pinning = false;
}

const TICK_MS = 1000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

/** cpuMsOf returns the CPU time (user + system) a process and its descendants have used, in ms, from /proc (NaN elsewhere). */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    for (const child of children === '' ? [] : children.split(' ')) ms += cpuMsOf(Number(child));
    return ms;
  } catch {
    return NaN;
  }
}

/** Running is one started child and the ports it reported. */
export interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  /** The gateway's admin port (its /metrics); 0 for the upstream. */
  readonly adminPort: number;
}

function pinned(cpu: string, args: readonly string[]): [string, string[]] {
  return pinning ? ['taskset', ['-c', cpu, process.execPath, ...args]] : [process.execPath, [...args]];
}

/** startChild starts `node args` on `cpu` and resolves once it prints `PORT n` or floodgate's `listening` line. */
function startChild(name: string, cpu: string, args: readonly string[]): Promise<Running> {
  const [command, argv] = pinned(cpu, args);
  const child = spawn(command, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within 60 s: ${out}${err}`));
    }, 60_000);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (out.length < 100_000) out += chunk;
      const m = /PORT (\d+)/.exec(out) ?? /"port":(\d+).*"msg":"listening"/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout!.removeAllListeners('data').resume();
      resolve({ child, port: Number(m[1]), adminPort: Number(/"adminPort":(\d+)/.exec(out)?.[1] ?? 0) });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${String(code)}): ${lastLines(err || out)}`));
    });
  });
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-8).join('\n');
}

/** startUpstreamProcess starts bench/overload/upstream.ts with `slots` × `serviceMs` on CPU 1. */
export function startUpstreamProcess(slots: number, serviceMs: number): Promise<Running> {
  return startChild('upstream', '1', [
    ...TSX_FLAGS,
    join(HERE, 'upstream.ts'),
    '--slots',
    String(slots),
    '--service-ms',
    String(serviceMs),
  ]);
}

/** startGateway writes `yaml` to `dir/name.yaml` and starts `floodgate serve` on it (free ports, no file watching) on CPU 0. */
export async function startGateway(name: string, dir: string, yaml: string): Promise<Running> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, yaml);
  return startChild(`gateway ${name}`, '0', [
    FLOODGATE,
    'serve',
    '--config',
    file,
    '--port',
    '0',
    '--admin-port',
    '0',
    '--no-watch',
  ]);
}

/** stop ends a child with SIGTERM and resolves once it has exited (SIGKILL after 5 s). */
export function stop(running: Running | undefined): Promise<void> {
  const child = running?.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** LoadChild runs plans in the load generator's own process, one at a time. */
export class LoadChild {
  private constructor(private readonly child: ChildProcess) {}

  /** start spawns bench/overload/load.ts on CPU 1 and resolves once it is ready for plans. */
  static start(): Promise<LoadChild> {
    const [command, argv] = pinned('1', [...TSX_FLAGS, join(HERE, 'load.ts'), '--child']);
    const child = spawn(command, argv, {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    return new Promise((resolve, reject) => {
      child.once('message', () => resolve(new LoadChild(child)));
      child.once('exit', (code) => reject(new Error(`the load generator exited (${String(code)})`)));
    });
  }

  /** run sends one plan and resolves with its records. */
  run(plan: LoadPlan): Promise<LoadRecords> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the load generator exited (${String(code)})`));
      this.child.once('exit', onExit);
      this.child.once('message', (records) => {
        this.child.off('exit', onExit);
        resolve(records as LoadRecords);
      });
      this.child.send(plan);
    });
  }

  /** close ends the child. */
  close(): Promise<void> {
    return stop({ child: this.child, port: 0, adminPort: 0 });
  }
}
