/**
 * floodgate/redis: the Redis store. Every decision is one atomic Lua script with the same rule as
 * the memory store, timed by the server's `TIME`; bring your own client through an adapter.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { Limiter, tokenBucket } from 'floodgate';
 * import { RedisStore, ioredisAdapter } from 'floodgate/redis';
 * const store = new RedisStore({ adapter: ioredisAdapter(new Redis()) });
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }), store });
 *
 * @packageDocumentation
 */
export {
  disconnectIoredis,
  ioredisAdapter,
  nodeRedisAdapter,
  type IoredisClient,
  type IoredisClosable,
  type NodeRedisAdapterOptions,
  type NodeRedisClient,
  type NodeRedisEvalOptions,
  type RedisAdapter,
} from './adapter.js';
export type { ConsumeAllEntry, ConsumeAllRequest, ConsumeAllResult } from './consume-all.js';
export { hashSlotOf, policyIdOf, redisKeyOf } from './key-layout.js';
export { RedisStore, type RedisStoreOptions } from './redis-store.js';
export { MEMORY_CHECK_SCRIPT, assessMemory, type RedisEvictionRisk, type RedisMemoryReport } from './memory-check.js';
export { RedisTable } from './redis-table.js';
export type { LocalFallback, OnError } from './failure-policy.js';
export { OverLimitCache } from './over-limit-cache.js';
export {
  BATCH_SCRIPT,
  CONSUME_ALL_SCRIPT,
  DECIDE_SCRIPTS,
  type LuaModule,
  type LuaPolicy,
  type LuaScript,
} from './scripts/index.js';
