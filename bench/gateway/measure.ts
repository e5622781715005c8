/**
 * What the gateway benchmark reads: wrk's figures, the CPU time of a process tree from /proc, and
 * Redis's command counts from `INFO commandstats`.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';

/** Round is one wrk run against one cell. */
export interface Round {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly non2xx: number;
  /** CPU time (user + system) of the proxy's processes (the process and its descendants) per request, in µs. */
  readonly cpuUsPerRequest: number;
  /** CPU time of the Redis server per request, in µs; NaN when the cell has none. */
  readonly redisCpuUsPerRequest: number;
  /** Redis commands per request, by command (from `INFO commandstats`); empty when the cell has no Redis. */
  readonly redisCommandsPerRequest: ReadonlyMap<string, number>;
}

/** TICK_US is one CPU tick of /proc, in µs. */
export const TICK_US = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

/** cpuTicks returns the CPU ticks (user + system, all threads) a process and all its descendants have used, from /proc. */
export function cpuTicks(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let total = Number(fields[11]) + Number(fields[12]);
  for (const child of childrenOf(pid)) total += cpuTicks(child);
  return total;
}

/** The children of every thread of a process (nginx's workers, a wrapper's node). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[] = [];
  try {
    tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ');
  } catch {
    // No children list: the process alone.
  }
  for (const t of tasks) if (t !== '') out.push(Number(t));
  return out;
}

/** durationMs reads one of wrk's durations (`812.00us`, `1.20ms`, `2.01s`) in ms. */
function durationMs(text: string, label: string): number {
  const m = new RegExp(`${label}\\s+([\\d.]+)(us|ms|s)\\b`).exec(text);
  if (m === null) return NaN;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
}

/** WrkOptions is one measured run: the command that runs wrk (pinned or not), the proxy's pid, and its Redis's. */
export interface WrkOptions {
  readonly command: readonly [string, string[]];
  readonly pid: number;
  readonly redis?: { readonly pid: number; readonly port: number };
}

/** runWrk runs wrk once and returns its figures with the proxy's (and its Redis's) CPU time and Redis's commands. */
export function runWrk(options: WrkOptions): Round {
  const { command, pid, redis } = options;
  const commandsBefore = redis === undefined ? undefined : commandStats(redis.port);
  const redisBefore = redis === undefined ? 0 : cpuTicks(redis.pid);
  const before = cpuTicks(pid);
  const r = spawnSync(command[0], command[1], { encoding: 'utf8' });
  const ticks = cpuTicks(pid) - before;
  const redisTicks = redis === undefined ? NaN : cpuTicks(redis.pid) - redisBefore;
  const commands = new Map<string, number>();
  const text = r.stdout;
  const requests = Number(/(\d+) requests in/.exec(text)?.[1] ?? NaN);
  if (redis !== undefined && commandsBefore !== undefined) {
    for (const [name, calls] of commandStats(redis.port)) {
      // The two INFO calls of this reading are not the proxy's.
      const made = calls - (commandsBefore.get(name) ?? 0) - (name === 'info' ? 1 : 0);
      if (made > 0) commands.set(name, made / requests);
    }
  }
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN),
    p50Ms: durationMs(text, '50%'),
    p99Ms: durationMs(text, '99%'),
    requests,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0),
    cpuUsPerRequest: (ticks * TICK_US) / requests,
    redisCpuUsPerRequest: (redisTicks * TICK_US) / requests,
    redisCommandsPerRequest: commands,
  };
}

/** commandStats returns Redis's calls per command so far (`INFO commandstats`, through redis-cli). */
export function commandStats(port: number): Map<string, number> {
  const out = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'INFO', 'commandstats'], {
    encoding: 'utf8',
  }).stdout;
  const calls = new Map<string, number>();
  for (const m of out.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

/** Probe is one response as a client sees it: status, header lines and body. */
export interface Probe {
  readonly status: number;
  readonly headers: readonly string[];
  readonly body: string;
}

/** probe sends `GET path` to a proxy on loopback and returns its answer. */
export function probe(port: number, path: string): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const headers: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          headers.push(`${res.rawHeaders[i]!}: ${res.rawHeaders[i + 1]!}`);
        resolve({ status: res.statusCode ?? 0, headers, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** median returns the middle value (the upper one of an even count). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
