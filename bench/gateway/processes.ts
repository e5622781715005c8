/**
 * The processes the gateway benchmarks start: any program that reports its port on stdout, pinned
 * to a CPU when the machine allows, and a redis-server of their own on a free loopback port.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';

/** PIN is whether processes are pinned to CPUs: with 2 CPUs or more and `taskset` installed. */
export const PIN = availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;

/** Running is a started process and the port it listens on. */
export interface Running {
  readonly name: string;
  readonly port: number;
  /** The admin port of a floodgate gateway (metrics); 0 for the others. */
  readonly adminPort: number;
  readonly child: ChildProcess;
}

/** pinned returns `command` run on `cpu` (under taskset when {@link PIN}), or as it is; `cpu` undefined: never pinned. */
export function pinned(cpu: string | undefined, command: string, args: readonly string[]): [string, string[]] {
  return PIN && cpu !== undefined ? ['taskset', ['-c', cpu, command, ...args]] : [command, [...args]];
}

/** portOf reads the port a process reports: `PORT n`, or floodgate's `listening` log line. */
export function portOf(out: string): number | undefined {
  const m = /PORT (\d+)/.exec(out) ?? /"port":(\d+).*"msg":"listening"/.exec(out);
  return m === null ? undefined : Number(m[1]);
}

/** startProcess starts `command` (on `cpu`, with `env`) and resolves once it reports its port; it rejects when it exits first or after 20 s. */
export function startProcess(
  name: string,
  cpu: string | undefined,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Running> {
  const [cmd, argv] = pinned(cpu, command, args);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${out}${err}`)), 20_000);
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const port = portOf(out);
      if (port !== undefined) {
        clearTimeout(timer);
        resolve({ name, port, adminPort: Number(/"adminPort":(\d+)/.exec(out)?.[1] ?? 0), child });
      }
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (${String(code)}): ${err}`)));
  });
}

/** freePort returns a loopback port nothing listened on a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** RedisServer is a redis-server a benchmark started. */
export interface RedisServer {
  readonly port: number;
  readonly child: ChildProcess;
}

/** startRedis starts a redis-server (on `cpu`) on a free loopback port, keeping nothing on disk; undefined when none is installed. */
export async function startRedis(dir: string, cpu: string | undefined): Promise<RedisServer | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = spawn(...pinned(cpu, 'redis-server', args), { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    if (spawnSync('redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8' }).stdout.trim() === 'PONG')
      return { port, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not answer PING within 5 s`);
}
