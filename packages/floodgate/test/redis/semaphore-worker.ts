// A worker process for semaphore-processes.test.ts. Mode `hold`: `lanes` loops each acquire a
// permit `cycles` times, count themselves in while holding it (INCR on a shared counter, whose
// replies show how many hold at once), and release it; prints { maxHolding, holds } as JSON.
// Mode `die`: acquires every permit and exits without releasing any, as a crashed holder would.
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisSemaphore, ioredisAdapter } from '../../src/redis.js';

interface WorkerArgs {
  readonly mode: 'hold' | 'die';
  readonly port: number;
  readonly name: string;
  readonly permits: number;
  readonly leaseMs: number;
  readonly lanes: number;
  readonly cycles: number;
  readonly holdMs: number;
  readonly counterKey: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const client = new Redis({ host: '127.0.0.1', port: args.port });
const semaphore = new RedisSemaphore({
  adapter: ioredisAdapter(client),
  name: args.name,
  permits: args.permits,
  leaseMs: args.leaseMs,
  pollMs: 10,
  timeoutMs: 5000,
});

async function lane(): Promise<{ maxHolding: number; holds: number }> {
  let maxHolding = 0;
  let holds = 0;
  for (let i = 0; i < args.cycles; i++) {
    const permit = await semaphore.acquire({ maxWaitMs: 20_000 });
    maxHolding = Math.max(maxHolding, await client.incr(args.counterKey));
    await sleep(args.holdMs);
    await client.decr(args.counterKey);
    assert(await permit.release(), 'a permit held well within its lease was reclaimed');
    holds++;
  }
  return { maxHolding, holds };
}

function assert(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

if (args.mode === 'die') {
  for (let i = 0; i < args.permits; i++) await semaphore.acquire({ maxWaitMs: 0 });
  process.stdout.write(JSON.stringify({ held: args.permits }));
  process.exit(0); // no release: the permits stay held until their leases end
}
const results = await Promise.all(Array.from({ length: args.lanes }, lane));
process.stdout.write(
  JSON.stringify({
    maxHolding: Math.max(...results.map((r) => r.maxHolding)),
    holds: results.reduce((sum, r) => sum + r.holds, 0),
  }),
);
client.disconnect();
