/**
 * Where the smooth limits' state lives: one Guava limiter per (limit, key), in this process
 * (the library's SmoothRateLimiter, on the service's clock) or on the service's Redis (the
 * library's RedisSmoothLimiter: one script per reservation, on the server's clock, shared by every
 * service process on that Redis). Both create a key's limiter at its first reservation, as Guava's
 * `create` does (a bursty one empty, a warming-up one cold), and both forget keys the same way a
 * Redis key expires: one left idle for {@link SMOOTH_IDLE_MS} after its last reservation came due
 * (on Redis: after its next-free moment) starts again as new.
 */
import { clockMicros, FloodgateError, SmoothRateLimiter, type Clock, type Store } from 'floodgate';
import type { RedisSmoothLimiter, RedisStore } from 'floodgate/redis';
import type { SmoothLimitSpec } from './smooth-config.js';

/** SMOOTH_IDLE_MS is how long a key's limiter outlives its next-free moment unused before it is forgotten: 1 hour. */
export const SMOOTH_IDLE_MS = 3_600_000;

/** MAX_SMOOTH_KEYS is how many keys' limiters a book keeps in this process; past it the least recently used is forgotten (on Redis, only its local handle). */
export const MAX_SMOOTH_KEYS = 65_536;

/** MAX_SMOOTH_NAME_LENGTH is the longest Redis name a limiter may have (the library's bound). */
const MAX_SMOOTH_NAME_LENGTH = 1024;

/** SmoothBook reserves permits on a (limit, key)'s limiter: the wait in ms (whole µs), or false when it would not fit `maxWaitMs`. */
export interface SmoothBook {
  /** `maxWaitMs` undefined: reserve whatever the wait (Guava's `reserve`); else only a wait of at most it (Guava's `tryAcquire` timeout). */
  reserve(
    limit: SmoothLimitSpec,
    limitId: string,
    key: string,
    permits: number,
    maxWaitMs: number | undefined,
  ): Promise<number | false>;
}

/** Lru is a Map kept in order of last use, holding at most {@link MAX_SMOOTH_KEYS} entries. */
class Lru<V> {
  private readonly map = new Map<string, V>();

  take(key: string, make: () => V): V {
    let value = this.map.get(key);
    if (value !== undefined) this.map.delete(key);
    else {
      value = make();
      if (this.map.size >= MAX_SMOOTH_KEYS) this.map.delete(this.map.keys().next().value!);
    }
    this.map.set(key, value);
    return value;
  }
}

interface Local {
  limiter: SmoothRateLimiter;
  /** When its last reservation came due, in µs: past it by {@link SMOOTH_IDLE_MS}, the limiter is forgotten. */
  idleFromMicros: number;
}

/** MemorySmoothBook keeps each key's SmoothRateLimiter in this process, on `clock`. */
export class MemorySmoothBook implements SmoothBook {
  private readonly keys = new Lru<Local>();
  constructor(private readonly clock: Clock) {}

  reserve(
    limit: SmoothLimitSpec,
    limitId: string,
    key: string,
    permits: number,
    maxWaitMs: number | undefined,
  ): Promise<number | false> {
    const nowMicros = clockMicros(this.clock);
    const local = this.keys.take(`${limitId}\u0000${key}`, () => ({
      limiter: this.create(limit),
      idleFromMicros: nowMicros,
    }));
    if (nowMicros - local.idleFromMicros >= SMOOTH_IDLE_MS * 1000) {
      local.limiter = this.create(limit);
      local.idleFromMicros = nowMicros;
    }
    const waitMicros =
      maxWaitMs === undefined
        ? local.limiter.reserveAt(permits, nowMicros)
        : local.limiter.tryReserveAt(permits, maxWaitMs * 1000, nowMicros);
    if (waitMicros !== false) local.idleFromMicros = Math.max(local.idleFromMicros, nowMicros + waitMicros);
    return Promise.resolve(waitMicros === false ? false : waitMicros / 1000);
  }

  private create(limit: SmoothLimitSpec): SmoothRateLimiter {
    const m = limit.model;
    return m.kind === 'bursty'
      ? SmoothRateLimiter.bursty(limit.permitsPerSecond, { maxBurstSeconds: m.maxBurstSeconds, clock: this.clock })
      : SmoothRateLimiter.warmingUp(limit.permitsPerSecond, m.warmupMs, {
          coldFactor: m.coldFactor,
          clock: this.clock,
        });
  }
}

/** RedisSmoothBook keeps each key's limiter on `store`'s Redis, named by domain, limit and key. */
export class RedisSmoothBook implements SmoothBook {
  private readonly handles = new Lru<RedisSmoothLimiter>();
  constructor(
    private readonly store: RedisStore,
    private readonly Limiter: typeof RedisSmoothLimiter,
  ) {}

  async reserve(
    limit: SmoothLimitSpec,
    limitId: string,
    key: string,
    permits: number,
    maxWaitMs: number | undefined,
  ): Promise<number | false> {
    const name = `ratelimit-smooth:${limitId}:${key}`;
    if (name.length > MAX_SMOOTH_NAME_LENGTH)
      throw new FloodgateError(
        'INVALID_KEY',
        `key is ${key.length} characters long; with the limit's name it must fit ${MAX_SMOOTH_NAME_LENGTH}`,
        'key',
      );
    const limiter = this.handles.take(name, () => this.create(limit, name));
    return maxWaitMs === undefined ? limiter.reserve(permits) : limiter.tryReserve(permits, maxWaitMs);
  }

  private create(limit: SmoothLimitSpec, name: string): RedisSmoothLimiter {
    const m = limit.model;
    const common = { store: this.store, name, permitsPerSecond: limit.permitsPerSecond, idleTtlMs: SMOOTH_IDLE_MS };
    return m.kind === 'bursty'
      ? this.Limiter.bursty({ ...common, maxBurstSeconds: m.maxBurstSeconds })
      : this.Limiter.warmingUp({ ...common, warmupMs: m.warmupMs, coldFactor: m.coldFactor });
  }
}

/** smoothBookFor returns the book for `store`: on its Redis when it is a RedisStore, else in this process on `clock`. */
export async function smoothBookFor(store: Store, clock: Clock): Promise<SmoothBook> {
  const redis = await import('floodgate/redis');
  return store instanceof redis.RedisStore
    ? new RedisSmoothBook(store, redis.RedisSmoothLimiter)
    : new MemorySmoothBook(clock);
}
