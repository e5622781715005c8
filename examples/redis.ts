// Redis: one limit shared by every process, through ioredis. At the store's defaults a sick Redis
// never holds a request (an adaptive timeout, a circuit), and while it is away each process admits
// its share of the limit locally, written back when Redis returns. REDIS_URL names the server
// (default redis://127.0.0.1:6379).
// Run: REDIS_URL=redis://127.0.0.1:6379 node --conditions=floodgate-source --import tsx examples/redis.ts
import { Redis } from 'ioredis';
import { Limiter, slidingWindowCounter } from 'floodgate';
import { ioredisAdapter, RedisStore } from 'floodgate/redis';

const redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', { retryStrategy: () => 50 });
const store = new RedisStore({ adapter: ioredisAdapter(redis) });
const limiter = new Limiter({ policy: slidingWindowCounter({ limit: 3, windowMs: 60_000 }), store });

const key = `example:${process.pid}`;
console.log('Redis, 3 a minute per key:');
for (let i = 1; i <= 4; i++) {
  const d = await limiter.consume(key);
  console.log(`  #${i} allowed=${d.allowed} remaining=${d.remaining} reason=${JSON.stringify(d.reason)}`);
}
await limiter.reset(key);
redis.disconnect();
