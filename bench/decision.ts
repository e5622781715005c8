/**
 * Decision service benchmark: Envoy's `ShouldRateLimit` over gRPC and `POST /json`, each with 3
 * descriptors per request, from one client process at 64 in flight, against a decision-service
 * process on the memory store. Beside each: a bare server of the same protocol that answers a
 * constant response and decides nothing (the transport's own ceiling), so the ratio is what
 * deciding costs; for gRPC also a grpc-js server that decides each descriptor with a `Map` of
 * counts and answers the same fields and headers (bench/decision/peers.ts). The sides run in
 * turns, three rounds each; the table shows each side's best round, and the ratios of server CPU
 * per request are the median of the rounds' own ratios, with their range. Then the same gRPC load
 * on Redis, counting Redis commands per request from
 * `INFO commandstats` before and after. Throughput is per CPU-second of the server process (read
 * from /proc), so it holds on a shared machine. Prints figures and ratios; nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/decision.ts [--redis-only]
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { startServiceProcess } from '../packages/server/test/ratelimit/processes.js';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';
import { ratio, table } from './support/format.js';
import { CONFIG, grpcCaller, request, serveBare } from './decision/peers.js';
import { median } from './support/timing.js';

const DURATION_MS = 3000;
const WARMUP_MS = 1000;
const IN_FLIGHT = 64;
interface Server {
  readonly pid: number;
  readonly port: number;
  stop(): Promise<void>;
}

/** cpuMs returns a process's user + system CPU time in ms, from /proc (Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime, stime: clock ticks of 10 ms
}

type Call = (i: number) => Promise<unknown>;

interface Result {
  /** Calls made and answered in the run. */
  readonly count: number;
  readonly perSecond: number;
  readonly perCpuSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
}

/** drive keeps IN_FLIGHT calls going for `ms` and measures each one's latency. */
async function drive(call: Call, ms: number, pid: number | undefined): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const cpuStart = pid === undefined ? 0 : cpuMs(pid);
  const start = performance.now();
  const end = start + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t = performance.now();
      try {
        await call(i++);
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsedMs = performance.now() - start;
  const cpu = pid === undefined ? elapsedMs : cpuMs(pid) - cpuStart;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    count: latencies.length,
    perSecond: (latencies.length * 1000) / elapsedMs,
    perCpuSecond: (latencies.length * 1000) / Math.max(1, cpu),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    errors,
  };
}

function jsonCaller(port: number): { call: Call; close: () => Promise<void> } {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: IN_FLIGHT, pipelining: 1 });
  const call: Call = async (i) => {
    const res = await pool.request({
      path: '/json',
      method: 'POST',
      body: JSON.stringify(request(i)),
      headers: { 'content-type': 'application/json' },
    });
    return res.body.text();
  };
  return { call, close: () => pool.close() };
}

async function startBare(kind: 'grpc' | 'grpc-map' | 'http'): Promise<Server> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, '--serve-bare', kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  const { port } = JSON.parse(line) as { port: number };
  return { pid: child.pid!, port, stop: async () => void child.kill('SIGTERM') };
}

async function startService(config: string, extra: readonly string[] = []): Promise<{ grpc: Server; http: Server }> {
  const p = await startServiceProcess(['--config', config, ...extra]);
  return { grpc: { pid: p.pid, port: p.grpcPort, stop: p.stop }, http: { pid: p.pid, port: p.httpPort, stop: p.stop } };
}

function row(name: string, r: Result, vs?: Result): string[] {
  return [
    name,
    Math.round(r.perSecond).toLocaleString('en'),
    Math.round(r.perCpuSecond).toLocaleString('en'),
    Math.round(r.perCpuSecond * 3).toLocaleString('en'),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.errors),
    vs === undefined ? '' : ratio(r.perCpuSecond / vs.perCpuSecond),
  ];
}

const ROUNDS = 3;

/** best returns the round with the most requests per server CPU-second. */
function best(results: readonly Result[]): Result {
  return results.reduce((a, b) => (b.perCpuSecond > a.perCpuSecond ? b : a));
}

interface Side {
  readonly call: Call;
  readonly pid: number;
}

/**
 * alternate measures each side ROUNDS times, taking turns (each round runs every side once), so
 * that a burst of load on a shared machine falls on one round, not on one side; it returns each
 * side's rounds, in order.
 */
async function alternate(sides: readonly Side[]): Promise<Result[][]> {
  for (const side of sides) await drive(side.call, WARMUP_MS, undefined);
  const rounds: Result[][] = sides.map(() => []);
  for (let round = 0; round < ROUNDS; round++)
    for (const [i, side] of sides.entries()) rounds[i]!.push(await drive(side.call, DURATION_MS, side.pid));
  return rounds;
}

/** cpuRatio prints the server CPU per request of `subject` ÷ `peer`'s, round by round: the median and the rounds' range. */
function cpuRatio(subject: readonly Result[], peer: readonly Result[]): string {
  const perRound = subject.map((s, i) => peer[i]!.perCpuSecond / s.perCpuSecond);
  const fmt = (x: number): string => `${x.toFixed(2)}x`;
  return `${fmt(median(perRound))} (rounds ${fmt(Math.min(...perRound))}-${fmt(Math.max(...perRound))})`;
}

async function memoryRuns(config: string, ratios: string[][]): Promise<string[][]> {
  const rows: string[][] = [];
  const service = await startService(config);
  const mapGrpc = await startBare('grpc-map');
  const bareGrpc = await startBare('grpc');
  const bareHttp = await startBare('http');
  try {
    const g = grpcCaller(service.grpc.port);
    const mg = grpcCaller(mapGrpc.port);
    const bg = grpcCaller(bareGrpc.port);
    const [floodgateRounds, mapRounds, bareRounds] = await alternate([
      { call: g.call, pid: service.grpc.pid },
      { call: mg.call, pid: mapGrpc.pid },
      { call: bg.call, pid: bareGrpc.pid },
    ]);
    for (const client of [g, mg, bg]) client.close();
    const [floodgateGrpc, mapGrpcResult, bareGrpcResult] = [
      best(floodgateRounds!),
      best(mapRounds!),
      best(bareRounds!),
    ];
    ratios.push(
      ['gRPC, memory store ÷ the grpc-js Map peer', cpuRatio(floodgateRounds!, mapRounds!)],
      ['gRPC, memory store ÷ the grpc-js constant answer', cpuRatio(floodgateRounds!, bareRounds!)],
      ['the grpc-js Map peer ÷ the constant answer', cpuRatio(mapRounds!, bareRounds!)],
    );
    const j = jsonCaller(service.http.port);
    const bj = jsonCaller(bareHttp.port);
    const [jsonRounds, bareJsonRounds] = await alternate([
      { call: j.call, pid: service.http.pid },
      { call: bj.call, pid: bareHttp.pid },
    ]);
    await Promise.all([j.close(), bj.close()]);
    const [floodgateJson, bareJsonResult] = [best(jsonRounds!), best(bareJsonRounds!)];
    ratios.push(['POST /json ÷ node:http constant answer', cpuRatio(jsonRounds!, bareJsonRounds!)]);
    rows.push(
      row('gRPC ShouldRateLimit, memory store', floodgateGrpc, bareGrpcResult),
      row('gRPC, grpc-js Map peer', mapGrpcResult, bareGrpcResult),
      row('gRPC, bare constant server', bareGrpcResult),
    );
    rows.push(
      row('POST /json, memory store', floodgateJson, bareJsonResult),
      row('POST /json, bare constant server', bareJsonResult),
    );
  } finally {
    await Promise.all([service.grpc.stop(), mapGrpc.stop(), bareGrpc.stop(), bareHttp.stop()]);
  }
  return rows;
}

async function redisRun(config: string): Promise<{ rows: string[][]; perRequest: string[][] }> {
  const redis = await startRedisServer();
  const admin = new Redis({ host: '127.0.0.1', port: redis.ports[0]! });
  const service = await startService(config, ['--redis', `127.0.0.1:${redis.ports[0]!}`]);
  try {
    const g = grpcCaller(service.grpc.port);
    await drive(g.call, WARMUP_MS, undefined);
    const before = await commandCounts(admin);
    const result = await drive(g.call, DURATION_MS, service.grpc.pid);
    const after = await commandCounts(admin);
    g.close();
    const requests = result.count;
    const perRequest = [...after.entries()]
      .map(([cmd, n]) => [cmd, ((n - (before.get(cmd) ?? 0)) / requests).toFixed(3)])
      .filter(([, v]) => v !== '0.000');
    return { rows: [row('gRPC ShouldRateLimit, Redis store', result)], perRequest };
  } finally {
    await service.grpc.stop();
    admin.disconnect();
    await redis.stop();
  }
}

/** commandCounts returns calls per Redis command, from INFO commandstats. */
async function commandCounts(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const counts = new Map<string, number>();
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) counts.set(m[1]!, Number(m[2]));
  counts.delete('info');
  return counts;
}

async function main(): Promise<void> {
  const config = join(tmpdir(), `floodgate-bench-decision-${process.pid}.yaml`);
  writeFileSync(config, CONFIG);
  console.error(
    `decision service: 3 descriptors per request, ${IN_FLIGHT} in flight, ${ROUNDS} rounds of ${DURATION_MS} ms each, the sides in turns, after ${WARMUP_MS} ms of warm-up; the table shows each side's best round`,
  );
  const ratios: string[][] = [];
  const rows = process.argv.includes('--redis-only') ? [] : await memoryRuns(config, ratios);
  const redis = await redisRun(config);
  rows.push(...redis.rows);
  const header = [
    'subject',
    'requests/s',
    'requests per server CPU-s',
    'decisions per server CPU-s',
    'p50 ms',
    'p99 ms',
    'errors',
    '÷ bare',
  ];
  console.log(table(header, rows, new Set([1, 2, 3, 4, 5, 6, 7])));
  if (ratios.length > 0) {
    console.log(
      `\nServer CPU per request, subject ÷ peer (median of ${ROUNDS} rounds taken in turns, and their range):`,
    );
    console.log(table(['subject ÷ peer', 'CPU per request'], ratios, new Set([1])));
  }
  console.log(
    `\nload average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} (on a shared machine, latencies and requests/s move with it; CPU-s figures less)`,
  );
  console.log('\nRedis commands per request (3 descriptors, one domain: one hash slot). EVALSHA is the round trip;');
  console.log('the others run inside the script and are counted by INFO commandstats too:');
  console.log(table(['command', 'per request'], redis.perRequest, new Set([1])));
}

const bareIndex = process.argv.indexOf('--serve-bare');
if (bareIndex >= 0) serveBare(process.argv[bareIndex + 1]!);
else await main();
