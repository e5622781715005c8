// Waiting and shaping: wait for admission instead of being refused, a shaping queue with a
// constant outflow, and a semaphore bounding concurrency. Everything runs on real time, briefly.
// Run: node --conditions=floodgate-source --import tsx examples/waiting.ts
import { FloodgateError, Limiter, Semaphore, ShapingQueue, tokenBucket } from 'floodgate';

const started = Date.now();
const since = (): string => `${String(Date.now() - started).padStart(4)} ms`;

// acquire: five callers share a bucket of 2 refilled at 20/s; each waits its turn, in order.
const limiter = new Limiter({ policy: tokenBucket({ capacity: 2, refillPerSecond: 20 }) });
await Promise.all(
  [1, 2, 3, 4, 5].map(async (n) => {
    await limiter.acquire('api', { maxWaitMs: 1000 });
    console.log(`${since()}  acquire: caller ${n} admitted`);
  }),
);

// A caller that cannot be admitted in time is refused with a typed error, and charged nothing.
const strict = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }) });
strict.consumeSync('job');
await strict.acquire('job', { maxWaitMs: 50 }).catch((error: unknown) => {
  if (error instanceof FloodgateError) console.log(`${since()}  acquire: gave up with ${error.code}`);
});

// ShapingQueue: one task every 25 ms at most, 2 in flight.
const queue = new ShapingQueue({ intervalMs: 25, capacity: 10, concurrency: 2 });
await Promise.all([1, 2, 3, 4].map((n) => queue.submit(async () => console.log(`${since()}  queue: task ${n} runs`))));

// Semaphore: at most 2 holders at once; the permit is released at the end of each block.
const pool = new Semaphore({ permits: 2 });
let inside = 0;
let most = 0;
await Promise.all(
  [1, 2, 3, 4, 5].map(async () => {
    using _permit = await pool.acquire({ maxWaitMs: 1000 });
    most = Math.max(most, ++inside);
    await new Promise((resolve) => setTimeout(resolve, 10));
    inside--;
  }),
);
console.log(`${since()}  semaphore: at most ${most} held at once`);
