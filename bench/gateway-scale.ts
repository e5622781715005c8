/**
 * What a second core buys: one `floodgate serve` process against two, each on its own port, every
 * process deciding on the same redis-server (so the limits stay shared and exact), in front of the
 * same upstream. The load is the gateway benchmark's admitted case (one per-IP token bucket that
 * never refuses, bench/gateway/cells.ts): wrk with `--connections` in all, split evenly over the
 * processes (one wrk per process, run at once), alternating one and two processes in each round.
 * Nothing is pinned: the gateways, wrk, the upstream and Redis share the machine's cores, as they
 * would on one host. It prints each setting's requests/s (summed), p99 (the worst wrk's), gateway
 * CPU per request and Redis commands per request, medians of the rounds, and two processes ÷ one.
 * Nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/gateway-scale.ts [--duration 3] [--rounds 5]
 *        [--connections 50]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CELLS, floodgateYaml } from './gateway/cells.js';
import { commandStats, cpuTicks, median } from './gateway/measure.js';
import { startProcess, startRedis, type Running } from './gateway/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS = join(ROOT, 'bench', 'gateway', 'peers.ts');
const MAIN = join(ROOT, 'packages', 'server', 'src', 'cli', 'main.ts');
const SOURCE = ['--conditions=floodgate-source', '--import', 'tsx'];
const TICK_US = 1_000_000 / Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);

/** One wrk run's output, awaited. */
function wrk(port: number, connections: number, seconds: number): Promise<string> {
  const child = spawn(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', `http://127.0.0.1:${port}/bench`],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => child.once('exit', () => resolve(out)));
}

interface Reading {
  readonly rps: number;
  readonly p99Ms: number;
  readonly cpuUsPerRequest: number;
  readonly redisCommandsPerRequest: number;
}

/** Loads every gateway at once, `connections` split over them, and reads the sums. */
async function round(
  gateways: readonly Running[],
  redisPort: number,
  connections: number,
  seconds: number,
): Promise<Reading> {
  const before = gateways.map((g) => cpuTicks(g.child.pid!));
  const commandsBefore = [...commandStats(redisPort).values()].reduce((a, b) => a + b, 0);
  const outs = await Promise.all(gateways.map((g) => wrk(g.port, Math.ceil(connections / gateways.length), seconds)));
  const ticks = gateways.reduce((sum, g, i) => sum + cpuTicks(g.child.pid!) - before[i]!, 0);
  const commands = [...commandStats(redisPort).values()].reduce((a, b) => a + b, 0) - commandsBefore - 1;
  const requests = outs.reduce((sum, o) => sum + Number(/(\d+) requests in/.exec(o)?.[1] ?? NaN), 0);
  const p99 = (o: string): number => {
    const m = /99%\s+([\d.]+)(us|ms|s)\b/.exec(o);
    return m === null ? NaN : Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
  };
  return {
    rps: outs.reduce((sum, o) => sum + Number(/Requests\/sec:\s+([\d.]+)/.exec(o)?.[1] ?? NaN), 0),
    p99Ms: Math.max(...outs.map(p99)),
    cpuUsPerRequest: (ticks * TICK_US) / requests,
    redisCommandsPerRequest: commands / requests,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '50' },
    },
  });
  const [seconds, rounds, connections] = [Number(values.duration), Number(values.rounds), Number(values.connections)];
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-scale-'));
  const running: Array<{ child: Running['child'] }> = [];
  try {
    const upstream = await startProcess('upstream', undefined, process.execPath, [
      ...SOURCE,
      PEERS,
      '--serve',
      'upstream',
    ]);
    const redis = await startRedis(dir, undefined);
    if (redis === undefined)
      throw new Error('bench/gateway-scale.ts needs redis-server (apt-get install -y redis-server)');
    running.push(upstream, redis);
    const spec = CELLS.find((c) => c.name === 'floodgate-redis')!;
    const file = join(dir, 'floodgate.yaml');
    await writeFile(file, floodgateYaml(spec, upstream.port, redis.port));
    const gateways: Running[] = [];
    for (let i = 0; i < 2; i++)
      gateways.push(
        await startProcess(`gateway ${i + 1}`, undefined, process.execPath, [
          ...[...SOURCE, MAIN, 'serve', '--config', file, '--port', '0', '--no-watch'],
        ]),
      );
    running.push(...gateways);
    const settings = [gateways.slice(0, 1), gateways];
    for (const s of settings) await round(s, redis.port, connections, 1);
    const readings: Reading[][] = [[], []];
    for (let r = 0; r < rounds; r++)
      for (const [i, s] of settings.entries()) readings[i]!.push(await round(s, redis.port, connections, seconds));
    const load = spawnSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).stdout.split(' ').slice(0, 3).join(' ');
    console.log(
      `${availableParallelism()} CPUs, nothing pinned, wrk ${connections} connections in all, ${rounds} rounds of ${seconds} s; load average ${load}`,
    );
    console.log('processes   req/s     p99 ms   gateway CPU µs/req   Redis commands/req');
    const med = (i: number, f: (r: Reading) => number): number => median(readings[i]!.map(f));
    for (const i of [0, 1])
      console.log(
        `${String(i + 1).padEnd(11)} ${med(i, (r) => r.rps)
          .toFixed(0)
          .padStart(6)} ${med(i, (r) => r.p99Ms)
          .toFixed(2)
          .padStart(10)} ${med(i, (r) => r.cpuUsPerRequest)
          .toFixed(1)
          .padStart(20)} ${med(i, (r) => r.redisCommandsPerRequest)
          .toFixed(3)
          .padStart(20)}`,
      );
    const ratios = readings[1]!.map((r, k) => r.rps / readings[0]![k]!.rps);
    console.log(
      `two processes ÷ one, requests/s: ${median(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
    );
  } finally {
    for (const r of running) r.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
