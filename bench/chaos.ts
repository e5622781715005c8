/**
 * Chaos benchmark (issue 20, "store faults never stall a request"): what a caller sees while Redis
 * misbehaves, for floodgate at its defaults, floodgate at its defaults before issue 20 spelled out
 * (`timeoutMs: 1000, onError: 'fail-open'`), and rate-limiter-flexible hardened (RateLimiterRedis
 * with an insurance RateLimiterMemory inside its RLWrapperTimeouts at 100 ms), side by side in one
 * run, each in its own process with its own ioredis client, each an open loop of 2,000 decisions/s
 * over 100 keys on a limit far above the load. Faults, one after another: Redis hung (SIGSTOP, then
 * SIGCONT), Redis killed (SIGKILL) and restarted on its port, Redis slow (a busy Lua script of 20 ms
 * back to back on another connection), and, on a Redis Cluster (cluster-node-timeout 1 s), a master
 * killed and its replica promoted. Then the healthy path's cost (defaults against a fixed 1,000 ms
 * timeout), `floodgate serve` at its Redis defaults through a hang and a restart, and three
 * processes on one key through a 10 s hang: what the fleet admitted against the stated bound, and
 * the key's remaining afterwards against the truth (bench/chaos/fleet.ts). It prints figures;
 * nothing is asserted.
 *
 *   npm run bench:chaos [-- --fault-ms 3000] [-- --only single,cluster,cost,gateway,fleet] [-- --md FILE|none]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { parseArgs, promisify } from 'node:util';
import {
  startRedisCluster,
  startRedisServer,
  type RedisServers,
} from '../packages/floodgate/test/support/redis-server.js';
import { promoted, replicaOf, slowDown } from '../packages/floodgate/test/chaos/faults.js';
import { runChild } from './support/spawn.js';
import { figuresOf, type FaultFigures, type FaultWindow } from './chaos/analyse.js';
import type { CostRounds } from './chaos/cost.js';
import { fleetChaos, type FleetFigures } from './chaos/fleet.js';
import { gatewayChaos, type GatewayFigures } from './chaos/gateway.js';
import { SideProcess } from './chaos/side-process.js';
import { SIDES, type SideName, type Target } from './chaos/sides.js';
import type { SideRecords } from './chaos/side.js';
import { markdownOf, printTables, type ChaosResults } from './chaos/report.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const KEYS = 100;
const WARM_MS = 2000;
const AFTER_MS = 3000;
const SLOW_BUSY_MS = 20;
const SECTIONS = ['single', 'cluster', 'cost', 'gateway', 'fleet'];
const run = promisify(execFile);

const { values } = parseArgs({
  options: {
    'fault-ms': { type: 'string', default: '3000' },
    rate: { type: 'string', default: '2000' },
    only: { type: 'string', default: SECTIONS.join(',') },
    md: { type: 'string', default: join(ROOT, 'bench', 'chaos', 'results.md') },
  },
});
const FAULT_MS = Number(values['fault-ms']);
const RATE = Number(values.rate);
const ONLY = new Set(values.only!.split(','));

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** Epoch ms on the sides' clock (their records use `performance.timeOrigin + performance.now()` too). */
const nowMs = (): number => performance.timeOrigin + performance.now();

/** Runs every side on `target` while `faults` runs, and returns each side's records and the fault windows. */
async function underLoad(
  target: Target,
  faults: () => Promise<FaultWindow[]>,
): Promise<{ windows: FaultWindow[]; records: SideRecords[] }> {
  const sides: SideProcess[] = [];
  try {
    for (const side of SIDES) sides.push(await SideProcess.start({ side, target, perSecond: RATE, keys: KEYS }));
    await sleep(WARM_MS);
    const windows = await faults();
    const records = await Promise.all(sides.map((s) => s.stop()));
    return { windows, records };
  } catch (error) {
    for (const s of sides) s.kill();
    throw error;
  }
}

/** One fault on a single Redis: `cause` returns once Redis is back; the episode lasts until AFTER_MS later. */
async function episode(name: string, cause: () => Promise<void>): Promise<FaultWindow> {
  const startMs = nowMs();
  await cause();
  const returnMs = nowMs();
  await sleep(AFTER_MS);
  return { name, startMs, returnMs, endMs: nowMs() };
}

async function singleRedis(): Promise<Array<[FaultWindow, SideRecords[]]>> {
  const servers = await startRedisServer();
  try {
    const { windows, records } = await underLoad({ cluster: false, ports: servers.ports }, async () => [
      await episode(`hung (SIGSTOP ${FAULT_MS / 1000} s)`, async () => {
        servers.signal(0, 'SIGSTOP');
        await sleep(FAULT_MS);
        servers.signal(0, 'SIGCONT');
      }),
      await episode(`killed, restarted after ${FAULT_MS / 1000} s`, async () => {
        await servers.kill(0);
        await sleep(FAULT_MS);
        await servers.restart(0);
      }),
      await episode(
        `slow (${SLOW_BUSY_MS} ms busy scripts, ${FAULT_MS / 1000} s)`,
        async () => void (await slowDown(servers.ports[0]!, { busyMs: SLOW_BUSY_MS, forMs: FAULT_MS })),
      ),
    ]);
    return windows.map((w) => [w, records]);
  } finally {
    await servers.stop();
  }
}

async function clusterFailover(): Promise<Array<[FaultWindow, SideRecords[]]>> {
  const servers: RedisServers = await startRedisCluster({ nodeTimeoutMs: 1000 });
  try {
    const replica = await replicaOf(servers.ports[0]!);
    const { windows, records } = await underLoad({ cluster: true, ports: servers.ports.slice(0, 3) }, async () => {
      const startMs = nowMs();
      await servers.kill(0);
      // Redis is back for the killed master's slots when its replica is a master (found by polling ROLE).
      const promotedAt = await promoted(replica, 15_000);
      const returnMs = promotedAt === undefined ? Number.NaN : performance.timeOrigin + promotedAt;
      await sleep(AFTER_MS + 1000);
      return [{ name: 'cluster: master killed, replica promoted', startMs, returnMs, endMs: nowMs() }];
    });
    return windows.map((w) => [w, records]);
  } finally {
    await servers.stop();
  }
}

async function cost(): Promise<CostRounds> {
  const servers = await startRedisServer();
  try {
    return (await runChild(ROOT, join(ROOT, 'bench', 'chaos', 'cost.ts'), [
      '--port',
      String(servers.ports[0]!),
    ])) as CostRounds;
  } finally {
    await servers.stop();
  }
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  const faults: Array<{ window: FaultWindow; figures: Record<SideName, FaultFigures> }> = [];
  const collect = (runs: Array<[FaultWindow, SideRecords[]]>): void => {
    for (const [window, records] of runs)
      faults.push({
        window,
        figures: Object.fromEntries(records.map((r) => [r.side, figuresOf(r, window, KEYS)])) as Record<
          SideName,
          FaultFigures
        >,
      });
  };
  if (ONLY.has('single')) {
    console.error('single Redis: hung, restarted, slow…');
    collect(await singleRedis());
  }
  if (ONLY.has('cluster')) {
    console.error('Redis Cluster: master killed…');
    collect(await clusterFailover());
  }
  let costs: CostRounds | undefined;
  if (ONLY.has('cost')) {
    console.error('healthy path cost…');
    costs = await cost();
  }
  let gateway: GatewayFigures[] = [];
  if (ONLY.has('gateway')) {
    console.error('floodgate serve: hung, restarted…');
    gateway = await gatewayChaos({ perSecond: 500, faultMs: FAULT_MS });
  }
  let fleet: FleetFigures[] = [];
  if (ONLY.has('fleet')) {
    console.error('three processes on one key: hung 10 s…');
    fleet = await fleetChaos();
  }
  const redisVersion = (await run('redis-server', ['--version'])).stdout.split(' ')[2]!.replace('v=', '');
  const results: ChaosResults = {
    faults,
    costs,
    gateway,
    fleet,
    rate: RATE,
    keys: KEYS,
    faultMs: FAULT_MS,
    seconds: Math.round((Date.now() - startedMs) / 1000),
    node: process.version,
    redis: redisVersion,
  };
  printTables(results);
  await mkdir(join(ROOT, '.bench-out'), { recursive: true });
  await writeFile(join(ROOT, '.bench-out', 'chaos.json'), JSON.stringify(results, null, 2));
  if (values.md !== 'none' && SECTIONS.every((s) => ONLY.has(s))) await writeFile(values.md!, markdownOf(results));
}

await main();
