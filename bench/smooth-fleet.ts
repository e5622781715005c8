/**
 * The smooth limiter on Redis across a fleet, in CPU-seconds: 4 processes on one redis-server
 * (started here on a free loopback port), each keeping 128 calls in flight, reserve() on one
 * RedisSmoothLimiter (bursty, at a rate no run reaches, so every reservation is a full decision)
 * against consume() of the Redis token bucket on one key, in 5 rounds alternating which goes
 * first. Wall-clock rates on a shared machine say more about the neighbours than about the code,
 * so the figure is decisions per CPU-second: the 4 processes' CPU (process.cpuUsage over their
 * loops) plus redis-server's (INFO cpu), and the ratio is the median of the rounds' ratios.
 * Target (issue 26): >= 0.8x the token bucket. Beside it, the round trips: EVALSHA calls per
 * decision (INFO commandstats) with 128 in flight (a turn's calls share a script) and with one in
 * flight per process (each reservation alone: target 1).
 *
 * Spacing of the fleet's admissions and divergences from real Guava over 10,000 random steps
 * across 4 processes are bench/smooth.ts's (`spacing`, `divergences`).
 *
 *   node --conditions=floodgate-source --import tsx bench/smooth-fleet.ts
 *
 * (about a minute; prints a table, asserts nothing).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Limiter, tokenBucket } from 'floodgate';
import { RedisSmoothLimiter, RedisStore, ioredisAdapter } from 'floodgate/redis';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';
import { ratio, table } from './support/format.js';

const SELF = fileURLToPath(import.meta.url);
const PROCESSES = 4;
const ROUNDS = 5;
const DURATION_MS = 2000;
type Subject = 'smooth' | 'bucket';

/** WorkerResult is what one process did: its decisions and the CPU it spent on them, in ms. */
interface WorkerResult {
  readonly decisions: number;
  readonly cpuMs: number;
}

/** A worker: `inFlight` calls of `subject` outstanding for `durationMs`, then one JSON line on stdout. */
async function work(port: number, subject: Subject, inFlight: number, name: string): Promise<void> {
  const client = new Redis({ host: '127.0.0.1', port });
  const store = new RedisStore({ adapter: ioredisAdapter(client), timeoutMs: 5000, onError: 'throw' });
  const smooth = RedisSmoothLimiter.bursty({ store, name, permitsPerSecond: 1e12 });
  const bucket = new Limiter({ policy: tokenBucket({ capacity: 1e12, refillPerSecond: 1e12 }), store });
  const decide = subject === 'smooth' ? () => smooth.reserve() : () => bucket.consume(name);
  await decide(); // the script loaded and the connection made before the count starts
  let decisions = 0;
  let stop = false;
  const cpu = process.cpuUsage();
  const loop = async (): Promise<void> => {
    while (!stop) {
      await decide();
      decisions++;
    }
  };
  const loops = Array.from({ length: inFlight }, loop);
  await new Promise((resolve) => setTimeout(resolve, DURATION_MS));
  stop = true;
  await Promise.all(loops);
  const used = process.cpuUsage(cpu);
  client.disconnect();
  const result: WorkerResult = { decisions, cpuMs: (used.user + used.system) / 1000 };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function startWorker(port: number, subject: Subject, inFlight: number, name: string): Promise<WorkerResult> {
  const child = spawn(
    process.execPath,
    ['--conditions=floodgate-source', '--import', 'tsx', SELF, 'worker', String(port), subject, String(inFlight), name],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as WorkerResult) : reject(new Error(`a worker exited ${code}: ${out}`)),
    ),
  );
}

/** serverCost reads redis-server's CPU seconds (user + sys) and its EVALSHA calls. */
async function serverCost(client: Redis): Promise<{ cpuMs: number; evalsha: number }> {
  const cpu = await client.info('cpu');
  const user = Number(/used_cpu_user:([0-9.]+)/.exec(cpu)?.[1]);
  const sys = Number(/used_cpu_sys:([0-9.]+)/.exec(cpu)?.[1]);
  const stats = await client.info('commandstats');
  const evalsha = Number(/cmdstat_evalsha:calls=([0-9]+)/.exec(stats)?.[1] ?? 0);
  return { cpuMs: (user + sys) * 1000, evalsha };
}

/** FleetRun is one subject's run on the fleet: decisions, client and server CPU (ms), EVALSHA calls. */
interface FleetRun {
  readonly decisions: number;
  readonly clientCpuMs: number;
  readonly serverCpuMs: number;
  readonly evalsha: number;
}

async function fleetRun(
  client: Redis,
  port: number,
  subject: Subject,
  inFlight: number,
  name: string,
): Promise<FleetRun> {
  const before = await serverCost(client);
  const results = await Promise.all(
    Array.from({ length: PROCESSES }, () => startWorker(port, subject, inFlight, name)),
  );
  const after = await serverCost(client);
  return {
    decisions: results.reduce((n, r) => n + r.decisions, 0) + PROCESSES,
    clientCpuMs: results.reduce((n, r) => n + r.cpuMs, 0),
    serverCpuMs: after.cpuMs - before.cpuMs,
    evalsha: after.evalsha - before.evalsha,
  };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const perCpuSecond = (r: FleetRun): number => r.decisions / ((r.clientCpuMs + r.serverCpuMs) / 1000);

async function main(): Promise<void> {
  const servers = await startRedisServer();
  const port = servers.ports[0]!;
  const client = new Redis({ host: '127.0.0.1', port });
  const rows: string[][] = [];
  const report = (name: string, value: string, target: string): void => {
    rows.push([name, value, target]);
    console.error(`  ${name}: ${value} (target ${target})`);
  };
  try {
    const runs: Record<Subject, FleetRun[]> = { smooth: [], bucket: [] };
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order: Subject[] = round % 2 === 0 ? ['smooth', 'bucket'] : ['bucket', 'smooth'];
      for (const subject of order) runs[subject].push(await fleetRun(client, port, subject, 128, `cpu-${round}`));
      ratios.push(perCpuSecond(runs.smooth.at(-1)!) / perCpuSecond(runs.bucket.at(-1)!));
    }
    for (const subject of ['smooth', 'bucket'] as const) {
      const each = runs[subject];
      report(
        `${subject}: decisions per CPU-second (4 clients + redis-server), median (rounds)`,
        `${Math.round(median(each.map(perCpuSecond)))} (${each.map((r) => Math.round(perCpuSecond(r))).join(', ')})`,
        '',
      );
      const total = (pick: (r: FleetRun) => number): number => each.reduce((n, r) => n + pick(r), 0);
      const decisions = total((r) => r.decisions);
      report(
        `${subject}: client / redis-server CPU per decision, EVALSHA per decision (128 in flight each)`,
        `${((total((r) => r.clientCpuMs) * 1000) / decisions).toFixed(2)} / ${((total((r) => r.serverCpuMs) * 1000) / decisions).toFixed(2)} µs, ${(total((r) => r.evalsha) / decisions).toFixed(4)}`,
        '',
      );
    }
    report(
      'smooth / token bucket, decisions per CPU-second, median of rounds',
      `${ratio(median(ratios))} (${ratios.map((r) => r.toFixed(2)).join(', ')})`,
      '>= 0.80x',
    );
    const alone = await fleetRun(client, port, 'smooth', 1, 'alone');
    report(
      'smooth: EVALSHA per reservation, one in flight per process (4 processes)',
      `${(alone.evalsha / alone.decisions).toFixed(4)} (${alone.evalsha} for ${alone.decisions})`,
      '1',
    );
  } finally {
    client.disconnect();
    await servers.stop();
  }
  console.log(table(['measure', 'value', 'target'], rows, new Set()));
}

if (process.argv[2] === 'worker') {
  const [port, subject, inFlight, name] = process.argv.slice(3);
  await work(Number(port), subject as Subject, Number(inFlight), name!);
} else {
  await main();
}
