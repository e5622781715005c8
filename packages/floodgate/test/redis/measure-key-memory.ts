/**
 * Prints the memory a key of each policy takes in Redis, for sizing `maxmemory`: MEMORY USAGE of
 * one throttled key, and the growth of `used_memory` per fresh key (one request each, 2,000 keys,
 * which includes Redis's own dictionary and expiry entries). Run with
 * `node --conditions=floodgate-source --import tsx packages/floodgate/test/redis/measure-key-memory.ts`.
 */
import { Redis } from 'ioredis';
import {
  Limiter,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';
import { RedisStore, ioredisAdapter } from '../../src/stores/redis/index.js';
import { startRedisServer } from '../support/redis-server.js';

const FRESH_KEYS = 2000;
const CASES: Array<[string, Algorithm, number]> = [
  ['tokenBucket capacity 100', tokenBucket({ capacity: 100, refillPerSecond: 1 }), 100],
  ['leakyBucket capacity 100', leakyBucket({ capacity: 100, leakPerSecond: 1 }), 100],
  ['gcra 100/min', gcra({ rate: 100, periodMs: 60_000, maxBurst: 99 }), 100],
  ['fixedWindow 100/min', fixedWindow({ limit: 100, windowMs: 60_000 }), 100],
  ['slidingWindowCounter 100/min', slidingWindowCounter({ limit: 100, windowMs: 60_000 }), 100],
  ['slidingWindowLog 10/min', slidingWindowLog({ limit: 10, windowMs: 60_000 }), 10],
  ['slidingWindowLog 100/min', slidingWindowLog({ limit: 100, windowMs: 60_000 }), 100],
  ['slidingWindowLog 1000/min', slidingWindowLog({ limit: 1000, windowMs: 60_000 }), 1000],
];

async function usedMemoryBytes(client: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
}

const servers = await startRedisServer();
const client = new Redis({ port: servers.ports[0]!, host: '127.0.0.1' });
try {
  const store = new RedisStore({ adapter: ioredisAdapter(client), onError: 'throw', overLimitCacheMaxKeys: 0 });
  for (const [name, policy, limit] of CASES) {
    await client.flushall();
    const limiter = new Limiter({ policy, store });
    for (let i = 0; i <= limit; i++) await limiter.consume('user:0123456789');
    const [throttled] = await client.keys('floodgate:*');
    const beforeBytes = await usedMemoryBytes(client);
    await Promise.all(
      Array.from({ length: FRESH_KEYS }, (_, i) => limiter.consume(`user:${String(i).padStart(10, '0')}`)),
    );
    const perKeyBytes = Math.round(((await usedMemoryBytes(client)) - beforeBytes) / FRESH_KEYS);
    const usage = String(await client.call('MEMORY', 'USAGE', throttled!, 'SAMPLES', '0'));
    console.log(`${name}: throttled key ${usage} B (MEMORY USAGE); ${perKeyBytes} B of used_memory per fresh key`);
  }
} finally {
  client.disconnect();
  await servers.stop();
}
