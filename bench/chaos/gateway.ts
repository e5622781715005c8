/**
 * The gateway through the same faults: `floodgate serve` with `store: { type: redis, url }` and
 * nothing else (the gateway's defaults), in front of an upstream that answers at once, under an
 * open loop of Poisson arrivals (bench/overload's generator, in its own process) while Redis is
 * hung (SIGSTOP) and then killed and restarted. Per fault: the requests due during it, their 5xx,
 * timeouts and failed connections, p99 latency (from when each was due), and when a request was
 * decided by Redis again after Redis returned (no `floodgate-degraded` header).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer, type RedisServers } from '../../packages/floodgate/test/support/redis-server.js';
import { LoadChild, startGateway, stop, type Running } from '../overload/processes.js';
import { TIMED_OUT, FAILED, type LoadRecords } from '../overload/load.js';
import { percentile } from '../redis/drive.js';

/** GatewayFigures are what one fault did to the gateway's answers. */
export interface GatewayFigures {
  readonly fault: string;
  readonly requests: number;
  readonly serverErrors: number;
  readonly timedOut: number;
  readonly failed: number;
  readonly p99Ms: number;
  readonly p99AfterMs: number;
  readonly backOnRedisMs: number | undefined;
}

/** GatewayOptions sets the load and each fault's length. */
export interface GatewayOptions {
  readonly perSecond: number;
  readonly faultMs: number;
}

const WARM_MS = 3000;
const AFTER_MS = 3000;

function yaml(redisPort: number, upstreamPort: number): string {
  return `store: { type: redis, url: "redis://127.0.0.1:${redisPort}" }
routes:
  - name: work
    match: { path: /work }
    upstream: http://127.0.0.1:${upstreamPort}
    rules:
      - name: roomy
        key: { type: route }
        policy: { algorithm: tokenBucket, capacity: 1000000, refillPerSecond: 1000000 }
`;
}

async function startUpstream(): Promise<Server> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Polls the gateway every 10 ms from now until a reply carries no `floodgate-degraded` header; ms after `fromEpochMs`. */
async function backOnRedis(url: string, fromEpochMs: number, withinMs: number): Promise<number | undefined> {
  while (Date.now() - fromEpochMs < withinMs) {
    const res = await fetch(url).catch(() => undefined);
    if (res !== undefined) {
      await res.arrayBuffer();
      if (res.status === 200 && res.headers.get('floodgate-degraded') === null) return Date.now() - fromEpochMs;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return undefined;
}

/** Figures of the requests due from `startMs` to `returnMs` (epoch), and of the second after. */
function figuresOf(
  records: LoadRecords,
  fault: string,
  startMs: number,
  returnMs: number,
  backOnRedisMs: number | undefined,
): GatewayFigures {
  const during: number[] = [];
  const after: number[] = [];
  let serverErrors = 0;
  let timedOut = 0;
  let failed = 0;
  for (let i = 0; i < records.dueMs.length; i++) {
    const due = records.startEpochMs + records.dueMs[i]!;
    const status = records.status[i]!;
    const latency = Number.isNaN(records.latencyMs[i]!) ? Infinity : records.latencyMs[i]!;
    if (due >= returnMs && due < returnMs + 1000) after.push(latency);
    if (due < startMs || due >= returnMs) continue;
    during.push(latency);
    if (status >= 500) serverErrors++;
    else if (status === TIMED_OUT) timedOut++;
    else if (status === FAILED) failed++;
  }
  during.sort((a, b) => a - b);
  after.sort((a, b) => a - b);
  return {
    fault,
    requests: during.length,
    serverErrors,
    timedOut,
    failed,
    p99Ms: percentile(during, 0.99),
    p99AfterMs: percentile(after, 0.99),
    backOnRedisMs,
  };
}

const sleepUntil = (epochMs: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now())));

/** Causes the faults at their times from `t0` (epoch ms) and returns their windows and recoveries. */
async function faults(
  redis: RedisServers,
  url: string,
  t0: number,
  faultMs: number,
): Promise<Array<[string, number, number, number | undefined]>> {
  const windows: Array<[string, number, number, number | undefined]> = [];
  await sleepUntil(t0 + WARM_MS);
  const hungMs = Date.now();
  redis.signal(0, 'SIGSTOP');
  await sleepUntil(hungMs + faultMs);
  redis.signal(0, 'SIGCONT');
  const resumedMs = Date.now();
  windows.push([
    `Redis hung (SIGSTOP ${faultMs / 1000} s)`,
    hungMs,
    resumedMs,
    await backOnRedis(url, resumedMs, AFTER_MS),
  ]);
  await sleepUntil(resumedMs + AFTER_MS);
  const killedMs = Date.now();
  await redis.kill(0);
  await sleepUntil(killedMs + faultMs);
  await redis.restart(0);
  const restartedMs = Date.now();
  windows.push([
    `Redis killed, restarted after ${faultMs / 1000} s`,
    killedMs,
    restartedMs,
    await backOnRedis(url, restartedMs, AFTER_MS),
  ]);
  return windows;
}

/** gatewayChaos runs the gateway through a hang and a restart of its Redis, and returns the figures per fault. */
export async function gatewayChaos(options: GatewayOptions): Promise<GatewayFigures[]> {
  const redis = await startRedisServer();
  const upstream = await startUpstream();
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-chaos-'));
  let gateway: Running | undefined;
  let load: LoadChild | undefined;
  try {
    gateway = await startGateway('chaos', dir, yaml(redis.ports[0]!, (upstream.address() as AddressInfo).port));
    load = await LoadChild.start();
    const url = `http://127.0.0.1:${gateway.port}/work`;
    const t0 = Date.now() + 500;
    const durationMs = WARM_MS + 2 * (options.faultMs + AFTER_MS);
    const running = load.run({
      url,
      phases: [{ durationMs, perSecond: options.perSecond }],
      timeoutMs: 5000,
      seed: 20,
      startAtEpochMs: t0,
    });
    const windows = await faults(redis, url, t0, options.faultMs);
    const records = await running;
    return windows.map(([fault, startMs, returnMs, back]) => figuresOf(records, fault, startMs, returnMs, back));
  } finally {
    await load?.close();
    await stop(gateway);
    upstream.closeAllConnections();
    upstream.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
