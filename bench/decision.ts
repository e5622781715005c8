/**
 * Decision service benchmark: Envoy's `ShouldRateLimit` over gRPC and `POST /json`, each with 3
 * descriptors per request, from one client process at 64 in flight, against a decision-service
 * process on the memory store. Beside each: a bare server of the same protocol that answers a
 * constant response and decides nothing (the transport's own ceiling), so the ratio is what
 * deciding costs; each subject and its peer run in turn, three times, and each keeps its best round. Then the same gRPC load on Redis, counting Redis commands per request from
 * `INFO commandstats` before and after. Throughput is per CPU-second of the server process (read
 * from /proc), so it holds on a shared machine. Prints figures and ratios; nothing is asserted.
 *
 *   node --conditions=floodgate-source --import tsx bench/decision.ts [--redis-only]
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import * as grpc from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { loadRateLimitService } from '../packages/server/src/ratelimit/protocol/proto.js';
import { startServiceProcess } from '../packages/server/test/ratelimit/processes.js';
import { startRedisServer } from '../packages/floodgate/test/support/redis-server.js';
import { ratio, table } from './support/format.js';

const DURATION_MS = 3000;
const WARMUP_MS = 1000;
const IN_FLIGHT = 64;
const CONFIG = `domain: bench
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
  - key: route
    rate_limit: { unit: second, requests_per_unit: 1000000000, algorithm: sliding-window }
  - key: tenant
    rate_limit: { unit: hour, requests_per_unit: 1000000000, algorithm: token-bucket }
`;

interface Server {
  readonly pid: number;
  readonly port: number;
  stop(): Promise<void>;
}

/** request returns the i-th request: 3 descriptors over 10,000 users, 50 routes, 20 tenants. */
function request(i: number): Record<string, unknown> {
  const user = (i * 7919) % 10_000;
  return {
    domain: 'bench',
    descriptors: [
      { entries: [{ key: 'user', value: `u${user}` }] },
      { entries: [{ key: 'route', value: `/r${user % 50}` }] },
      { entries: [{ key: 'tenant', value: `t${user % 20}` }] },
    ],
  };
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

function grpcCaller(port: number): { call: Call; close: () => void } {
  const Service = loadRateLimitService();
  const client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    ShouldRateLimit(r: unknown, cb: (e: Error | null, v: unknown) => void): void;
  };
  const call: Call = (i) =>
    new Promise((resolve, reject) =>
      client.ShouldRateLimit(request(i), (e, v) => (e === null ? resolve(v) : reject(e))),
    );
  return { call, close: () => client.close() };
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

/** bare runs in a child process: a server of `kind` that answers a constant OK and decides nothing. */
function serveBare(kind: string): void {
  const body = JSON.stringify({ overallCode: 'OK', statuses: [{ code: 'OK' }, { code: 'OK' }, { code: 'OK' }] });
  if (kind === 'http') {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body),
      );
    });
    server.listen(0, '127.0.0.1', () =>
      console.log(JSON.stringify({ port: (server.address() as { port: number }).port })),
    );
    return;
  }
  const server = new grpc.Server();
  const answer = { overall_code: 'OK', statuses: [{ code: 'OK' }, { code: 'OK' }, { code: 'OK' }] };
  server.addService(loadRateLimitService().service, {
    ShouldRateLimit: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, answer),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (_e, port) =>
    console.log(JSON.stringify({ port })),
  );
}

async function startBare(kind: 'grpc' | 'http'): Promise<Server> {
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

/** better keeps the round with more requests per server CPU-second. */
function better(a: Result | undefined, b: Result): Result {
  return a === undefined || b.perCpuSecond > a.perCpuSecond ? b : a;
}

/**
 * pair measures a subject and its bare peer ROUNDS times, alternating them, and keeps each one's
 * best round, so that one burst of load on a shared machine does not decide a ratio.
 */
async function pair(subject: Call, subjectPid: number, bare: Call, barePid: number): Promise<[Result, Result]> {
  await drive(subject, WARMUP_MS, undefined);
  await drive(bare, WARMUP_MS, undefined);
  let s: Result | undefined;
  let b: Result | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    s = better(s, await drive(subject, DURATION_MS, subjectPid));
    b = better(b, await drive(bare, DURATION_MS, barePid));
  }
  return [s!, b!];
}

async function memoryRuns(config: string): Promise<string[][]> {
  const rows: string[][] = [];
  const service = await startService(config);
  const bareGrpc = await startBare('grpc');
  const bareHttp = await startBare('http');
  try {
    const g = grpcCaller(service.grpc.port);
    const bg = grpcCaller(bareGrpc.port);
    const [floodgateGrpc, bareGrpcResult] = await pair(g.call, service.grpc.pid, bg.call, bareGrpc.pid);
    g.close();
    bg.close();
    const j = jsonCaller(service.http.port);
    const bj = jsonCaller(bareHttp.port);
    const [floodgateJson, bareJsonResult] = await pair(j.call, service.http.pid, bj.call, bareHttp.pid);
    await Promise.all([j.close(), bj.close()]);
    rows.push(
      row('gRPC ShouldRateLimit, memory store', floodgateGrpc, bareGrpcResult),
      row('gRPC, bare constant server', bareGrpcResult),
    );
    rows.push(
      row('POST /json, memory store', floodgateJson, bareJsonResult),
      row('POST /json, bare constant server', bareJsonResult),
    );
  } finally {
    await Promise.all([service.grpc.stop(), bareGrpc.stop(), bareHttp.stop()]);
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
    `decision service: 3 descriptors per request, ${IN_FLIGHT} in flight, best of ${ROUNDS} runs of ${DURATION_MS} ms (alternating with the bare peer) after ${WARMUP_MS} ms of warm-up`,
  );
  const rows = process.argv.includes('--redis-only') ? [] : await memoryRuns(config);
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
