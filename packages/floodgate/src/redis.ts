/**
 * floodgate/redis: the Redis store ({@link RedisStore}), the distributed concurrency limit
 * ({@link RedisSemaphore}) and Guava's smooth limiters shared by a fleet ({@link RedisSmoothLimiter}).
 * This entry point joins two layers: the store lives with the stores, the semaphore and the smooth
 * limiter with the waiting layer they build on.
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
export {
  RedisSmoothLimiter,
  type RedisSmoothAcquireOptions,
  type RedisSmoothBurstyOptions,
  type RedisSmoothOptions,
  type RedisSmoothWaitOptions,
  type RedisSmoothWarmingUpOptions,
} from './waiting/redis-smooth-limiter.js';
export { SMOOTH_SCRIPT } from './stores/redis/scripts/smooth.js';
export type { StoreShares } from './stores/redis/redis-store.js';
export { LeasedStore, type LeasedStoreOptions } from './leases/leased-store.js';
export { RedisLeaseSource } from './leases/redis-lease-source.js';
export { LEASE_SCRIPTS } from './stores/redis/scripts/lease.js';
export { leaseOverAdmission, type LeaseOptions } from './leases/lease-options.js';
