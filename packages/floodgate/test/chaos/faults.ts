/**
 * Faults the chaos tests (and bench/chaos.ts) cause besides what {@link RedisServers} does to a
 * process: a slow Redis, and finding and waiting for a Redis Cluster replica's promotion.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/**
 * BUSY_SCRIPT keeps Redis busy for ARGV[1] µs, by its own clock: Redis runs one script at a time
 * and nothing else meanwhile, so every other client's command waits behind it.
 */
const BUSY_SCRIPT = `
local function now() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end
local stop = now() + tonumber(ARGV[1])
while now() < stop do end
return 1`;

/** SlowOptions configures {@link slowDown}. */
export interface SlowOptions {
  /** How long each busy script holds Redis, in ms (20 ms makes every other command wait up to that). */
  readonly busyMs: number;
  /** How long to keep Redis slow, in ms. */
  readonly forMs: number;
}

/**
 * slowDown makes the Redis on `port` slow for `forMs`: one extra connection runs a busy script of
 * `busyMs` back to back, so each other command waits behind up to `busyMs`. Resolves with how
 * many scripts ran, once the last has ended.
 */
export async function slowDown(port: number, options: SlowOptions): Promise<number> {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  let scripts = 0;
  try {
    const untilMs = performance.now() + options.forMs;
    while (performance.now() < untilMs) {
      await client.eval(BUSY_SCRIPT, 0, String(Math.round(options.busyMs * 1000)));
      scripts++;
    }
  } finally {
    client.disconnect();
  }
  return scripts;
}

/**
 * replicaOf returns the port of the replica of the master on `masterPort`, from that master's
 * CLUSTER NODES, asking again for up to 5 s (a freshly made cluster may not list it everywhere yet).
 */
export async function replicaOf(masterPort: number): Promise<number> {
  const deadlineMs = performance.now() + 5000;
  for (;;) {
    const { stdout } = await run('redis-cli', ['-p', String(masterPort), 'cluster', 'nodes']);
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const masterId = lines.find((f) => f[2]!.includes('myself'))?.[0];
    const replica = lines.find((f) => masterId !== undefined && f[3] === masterId);
    if (replica !== undefined) return Number(replica[1]!.split(/[:@]/)[1]);
    if (performance.now() > deadlineMs)
      throw new Error(`no replica of 127.0.0.1:${masterPort} in its CLUSTER NODES:\n${stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * promoted polls the ROLE of the node on `port` every 20 ms until it is a master; resolves with
 * when (performance.now()), or undefined once `withinMs` has passed.
 */
export async function promoted(port: number, withinMs: number): Promise<number | undefined> {
  const deadlineMs = performance.now() + withinMs;
  while (performance.now() < deadlineMs) {
    const { stdout } = await run('redis-cli', ['-p', String(port), 'role']);
    if (stdout.startsWith('master')) return performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}
