/**
 * A Redis Cluster master killed under load, for bench/redis.ts: four open loops of 600 decisions/s
 * each over 100 keys, one per failure policy (throw, fail-open, fail-closed, a local fallback with
 * half the limit), through one ioredis Cluster and one store (timeoutMs 250), while master 0 is
 * killed and its replica promoted (cluster-node-timeout 1 s). For each policy it measures when
 * every key was decided by Redis again after the promotion, how many decisions rejected (reached
 * the caller as errors) or never settled, what the others answered, and the p99 meanwhile.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { Limiter, tokenBucket, type Decision } from 'floodgate';
import { RedisStore, ioredisAdapter, type OnError } from 'floodgate/redis';
import { startRedisCluster } from '../../packages/floodgate/test/support/redis-server.js';
import { OpenLoop, percentile, type OpenSample } from './drive.js';

const run = promisify(execFile);
const KEYS = 100;
const POLICIES: ReadonlyArray<[string, OnError]> = [
  ['throw', 'throw'],
  ['fail-open', 'fail-open'],
  ['fail-closed', 'fail-closed'],
  ['local fallback 0.5', { fallback: 'local', share: 0.5 }],
];

/** Report receives one result line: what, the figure, and what it is beside. */
export type Report = (name: string, value: string, vs?: string) => void;

/** One policy's loop, and what its decisions answered. */
interface Run {
  readonly name: string;
  readonly loop: OpenLoop;
  readonly reasons: Map<string, number>;
}

/** runOf returns a loop deciding through `store` under `onError`, tallying the reasons of decisions asked after `since()`. */
function runOf(store: RedisStore, name: string, onError: OnError, since: () => number): Run {
  const limiter = new Limiter({
    policy: tokenBucket({ capacity: 1e12, refillPerSecond: 1e12 }),
    store: store.withOnError(onError),
  });
  const reasons = new Map<string, number>();
  const decide = async (key: string): Promise<Decision> => {
    const askedMs = performance.now();
    const decision = await limiter.consume(key);
    if (askedMs >= since()) reasons.set(decision.reason, (reasons.get(decision.reason) ?? 0) + 1);
    return decision;
  };
  return {
    name,
    reasons,
    loop: new OpenLoop(decide, { perTick: 3, keys: KEYS, healthy: (d) => (d as Decision).reason === 'ok' }),
  };
}

/** failover runs the case on a cluster it starts and stops, and reports its figures per policy. */
export async function failover(report: Report): Promise<void> {
  const servers = await startRedisCluster({ nodeTimeoutMs: 1000 });
  const masters = servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port }));
  const client = new Cluster(masters, {
    slotsRefreshInterval: 250,
    clusterRetryStrategy: () => 100,
    redisOptions: { maxRetriesPerRequest: 1 },
  });
  client.on('error', () => {});
  try {
    const store = new RedisStore({ adapter: ioredisAdapter(client), prefix: 'failover:', timeoutMs: 250 });
    let killedMs = Infinity;
    const runs = POLICIES.map(([name, onError]) => runOf(store, name, onError, () => killedMs));
    const replica = await replicaOf(servers.ports[0]!, servers.ports);
    for (const r of runs) r.loop.start();
    await sleep(1500);
    await servers.kill(0);
    killedMs = performance.now();
    const promotedMs = await promoted(replica, killedMs + 15_000);
    await sleep(3000);
    await Promise.all(runs.map((r) => r.loop.stop()));
    report(
      'cluster failover (master killed, node timeout 1 s): replica promoted',
      promotedMs === undefined ? 'never' : `${Math.round(promotedMs - killedMs)} ms after the kill`,
    );
    for (const r of runs) reportRun(report, r, killedMs, promotedMs);
  } finally {
    client.disconnect();
    await servers.stop();
  }
}

/** Reports one policy's recovery, errors and answers from the kill on. */
function reportRun(report: Report, r: Run, killedMs: number, promotedMs: number | undefined): void {
  const samples = r.loop.samples;
  const healthyMs = promotedMs === undefined ? undefined : allKeysHealthySince(samples, promotedMs);
  const during = samples
    .filter((s) => s.startedMs >= killedMs && (healthyMs === undefined || s.startedMs < healthyMs))
    .map((s) => s.latencyMs)
    .sort((a, b) => a - b);
  const failed = samples.filter((s) => s.failed && s.startedMs >= killedMs).length;
  const asked = samples.filter((s) => s.startedMs >= killedMs).length;
  const answers = [...r.reasons].map(([reason, n]) => `${reason} ${n}`).join(', ');
  report(
    `cluster failover, ${r.name}: every key decided by Redis again`,
    healthyMs === undefined ? 'never' : `${Math.round(healthyMs - promotedMs!)} ms after the promotion`,
  );
  report(
    `cluster failover, ${r.name}: errors reaching the caller, unsettled`,
    `${failed} of ${asked}, ${r.loop.inFlight}`,
    `answers: ${answers}; p99 ${percentile(during, 0.99).toFixed(1)} ms until healthy`,
  );
}

/** The port of the replica of the master on `masterPort`, from CLUSTER NODES. */
async function replicaOf(masterPort: number, ports: readonly number[]): Promise<number> {
  const { stdout } = await run('redis-cli', ['-p', String(masterPort), 'cluster', 'nodes']);
  const lines = stdout
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  const masterId = lines.find((f) => f[1]!.startsWith(`127.0.0.1:${masterPort}@`))![0];
  const replica = lines.find((f) => f[3] === masterId);
  const port = replica === undefined ? undefined : Number(replica[1]!.split(/[:@]/)[1]);
  if (port === undefined || !ports.includes(port))
    throw new Error(`no replica of 127.0.0.1:${masterPort} in CLUSTER NODES`);
  return port;
}

/** Polls `port`'s ROLE until it is a master; returns when, or undefined past `deadlineMs`. */
async function promoted(port: number, deadlineMs: number): Promise<number | undefined> {
  while (performance.now() < deadlineMs) {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'role']);
    if (stdout.startsWith('master')) return performance.now();
    await sleep(20);
  }
  return undefined;
}

/**
 * The first time after `sinceMs` by which every key has been decided by Redis in a decision asked
 * after `sinceMs` (the latest of the keys' first healthy answers, on arrival), or undefined.
 */
function allKeysHealthySince(samples: readonly OpenSample[], sinceMs: number): number | undefined {
  const firstHealthy = new Map<string, number>();
  for (const s of samples) {
    if (!s.healthy || s.startedMs < sinceMs) continue;
    const at = s.startedMs + s.latencyMs;
    const old = firstHealthy.get(s.key);
    if (old === undefined || at < old) firstHealthy.set(s.key, at);
  }
  return firstHealthy.size < KEYS ? undefined : Math.max(...firstHealthy.values());
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
