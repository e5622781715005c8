// A worker process for processes.test.ts: hammers shared keys through its own client, in real time
// (Redis's TIME), and prints how much each policy admitted, as JSON on stdout.
import { Cluster, Redis } from 'ioredis';
import { RedisStore, disconnectIoredis, ioredisAdapter } from '../../src/stores/redis/index.js';
import { exactPolicies, allOrNothing } from './worker-policies.js';

interface WorkerArgs {
  readonly ports: number[];
  readonly cluster: boolean;
  readonly prefix: string;
  readonly requests: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const client = args.cluster
  ? new Cluster(args.ports.map((port) => ({ host: '127.0.0.1', port })))
  : new Redis({ host: '127.0.0.1', port: args.ports[0]! });
const store = new RedisStore({ adapter: ioredisAdapter(client), prefix: args.prefix, timeoutMs: 5000 });

/** Runs `once` `args.requests` times, 16 at a time, and counts the admitted ones. */
async function hammer(once: () => Promise<boolean>): Promise<number> {
  let admitted = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next++ < args.requests) if (await once()) admitted++;
  };
  await Promise.all(Array.from({ length: 16 }, lane));
  return admitted;
}

const admitted: Record<string, number> = {};
for (const [name, policy] of Object.entries(exactPolicies)) {
  const table = store.bind(policy);
  admitted[name] = await hammer(async () => (await table.consume('shared', 1, 0)).allowed);
}
const requests = allOrNothing.map((policy) => ({ policy, key: 'shared-all' }));
admitted.allOrNothing = await hammer(async () => (await store.consumeAll(requests)).allowed);
process.stdout.write(JSON.stringify(admitted));
await disconnectIoredis(client);
