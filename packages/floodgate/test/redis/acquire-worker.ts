// A worker process for acquire-processes.test.ts, forked with an IPC channel. It builds one
// Limiter per policy over its own RedisStore (real Redis TIME), warms both up, says `ready`, then
// for every `run` message starts `count` acquires on the shared key at once and answers with when
// each call started and settled (Date.now(), the same clock as the other processes and Redis), and
// how. `exit` disconnects it.
import { Redis } from 'ioredis';
import { FloodgateError, Limiter } from '../../src/index.js';
import { RedisStore, ioredisAdapter } from '../../src/redis.js';
import {
  policyOf,
  type Outcome,
  type ParentMessage,
  type PolicyKind,
  type RunMessage,
  type WorkerArgs,
  type WorkerReply,
} from './acquire-policies.js';

function send(reply: WorkerReply): void {
  if (process.send === undefined) throw new Error('acquire-worker.ts must be forked with an IPC channel');
  process.send(reply);
}

async function run(limiter: Limiter, message: RunMessage): Promise<Outcome[]> {
  const once = async (): Promise<Outcome> => {
    const startedAt = Date.now();
    try {
      await limiter.acquire(message.key, { maxWaitMs: message.maxWaitMs });
      return { startedAt, settledAt: Date.now(), error: undefined };
    } catch (error) {
      const settledAt = Date.now();
      return { startedAt, settledAt, error: error instanceof FloodgateError ? error.code : String(error) };
    }
  };
  return Promise.all(Array.from({ length: message.count }, once));
}

const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const client = new Redis({ host: '127.0.0.1', port: args.port });
const store = new RedisStore({ adapter: ioredisAdapter(client), prefix: args.prefix, timeoutMs: 10_000 });
const limiters: Record<PolicyKind, Limiter> = {
  'token-bucket': new Limiter({ policy: policyOf('token-bucket', args.capacity, args.perSecond), store }),
  gcra: new Limiter({ policy: policyOf('gcra', args.capacity, args.perSecond), store }),
};
// Connect and load the script before the parent starts the clock, on keys of this process alone.
for (const limiter of Object.values(limiters)) await limiter.acquire(`warm-up:${process.pid}`);

process.on('message', (message: ParentMessage) => {
  if (message.type === 'exit') {
    client.disconnect();
    process.disconnect();
    return;
  }
  run(limiters[message.policy], message).then(
    (outcomes) => send({ type: 'done', outcomes }),
    (error: unknown) => {
      process.stderr.write(`acquire-worker: ${String(error)}\n`);
      process.exit(1);
    },
  );
});
send({ type: 'ready' });
