/**
 * floodgate/redis: the Redis store ({@link RedisStore}) and the distributed concurrency limit
 * ({@link RedisSemaphore}). This entry point joins two layers: the store lives with the stores,
 * the semaphore with the waiting layer it builds on.
 *
 * @packageDocumentation
 */
export * from './stores/redis/index.js';
export {
  RedisPermit,
  RedisSemaphore,
  SEMAPHORE_SCRIPT,
  type RedisPermitState,
  type RedisSemaphoreAcquireOptions,
  type RedisSemaphoreOptions,
} from './waiting/redis-semaphore.js';
