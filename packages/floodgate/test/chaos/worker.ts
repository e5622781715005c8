// A worker process for the chaos tests: a steady load (fault-load.ts's Load) on a RedisStore at its
// defaults, through its own ioredis client at its defaults, as a user would set them up. Every
// 100 ms it prints a status line (see WorkerStatus); on `stop` from stdin it stops issuing, waits
// for every decision to settle, prints a last line with `done: true` and exits.
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Cluster, Redis } from 'ioredis';
import { tokenBucket } from '../../src/index.js';
import { RedisStore, disconnectIoredis, ioredisAdapter } from '../../src/stores/redis/index.js';
import { Load } from '../redis/fault-load.js';

/** WorkerArgs is the worker's one argument, in JSON. */
export interface WorkerArgs {
  readonly ports: readonly number[];
  readonly cluster: boolean;
  readonly prefix: string;
}

/**
 * WorkerStatus is one status line: when (epoch ms) the latest decision made by Redis was asked, the
 * oldest of those times among the keys (so every key has been decided by Redis since then),
 * decisions settled, errors that reached the caller (with a sample message), reasons tallied,
 * unhandled rejections; on the last line, `done` and how many never settled.
 */
export interface WorkerStatus {
  readonly redisAskedMs: number;
  readonly everyKeyRedisAskedMs: number;
  readonly settled: number;
  readonly errors: number;
  readonly error?: string;
  readonly reasons: Record<string, number>;
  readonly unhandled: number;
  readonly done?: boolean;
  readonly unsettled?: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const nodes = args.ports.map((port) => ({ host: '127.0.0.1', port }));
const client = args.cluster ? new Cluster(nodes) : new Redis(nodes[0]!);
client.on('error', () => {}); // a user's logger; the store answers meanwhile
let unhandled = 0;
process.on('unhandledRejection', () => void unhandled++);

const store = new RedisStore({ adapter: ioredisAdapter(client), prefix: args.prefix });
const KEYS = 30;
const load = new Load({
  keys: KEYS,
  perTick: 2,
  tables: { defaults: store.bind(tokenBucket({ capacity: 1e6, refillPerSecond: 1e6 })) },
});
const status = {
  redisAskedMs: 0,
  settled: 0,
  errors: 0,
  error: undefined as string | undefined,
  reasons: {} as Record<string, number>,
};
const keyRedisAskedMs = new Map<string, number>();
let seen = 0;

/** The oldest of the keys' latest decisions by Redis (0 until every key has had one). */
function everyKeyRedisAskedMs(): number {
  return keyRedisAskedMs.size < KEYS ? 0 : Math.min(...keyRedisAskedMs.values());
}

function report(extra: Partial<WorkerStatus> = {}): void {
  for (; seen < load.samples.length; seen++) {
    const s = load.samples[seen]!;
    status.settled++;
    const reason = s.decision?.reason ?? 'error';
    status.reasons[reason] = (status.reasons[reason] ?? 0) + 1;
    if (s.decision === undefined) {
      status.errors++;
      status.error ??= s.error instanceof Error ? s.error.message : String(s.error);
    }
    if (reason !== 'ok' && reason !== 'limit') continue;
    const askedMs = performance.timeOrigin + s.startedMs;
    status.redisAskedMs = Math.max(status.redisAskedMs, askedMs);
    keyRedisAskedMs.set(s.key, Math.max(keyRedisAskedMs.get(s.key) ?? 0, askedMs));
  }
  process.stdout.write(
    JSON.stringify({ ...status, everyKeyRedisAskedMs: everyKeyRedisAskedMs(), unhandled, ...extra }) + '\n',
  );
}

load.start();
const timer = setInterval(() => report(), 100);
for await (const line of createInterface({ input: process.stdin })) if (line.trim() === 'stop') break;
clearInterval(timer);
const unsettled = await load.stop(5000).then(
  () => undefined,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
report({ done: true, ...(unsettled === undefined ? {} : { unsettled }) });
await disconnectIoredis(client);
