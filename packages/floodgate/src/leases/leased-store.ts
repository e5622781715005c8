import type { Algorithm } from '../core/algorithm.js';
import { FloodgateError } from '../core/errors.js';
import type { RedisStore } from '../stores/redis/redis-store.js';
import type { Store } from '../stores/store.js';
import { Bindings } from '../stores/bindings.js';
import { LeasedTable } from './leased-table.js';
import { leaseSettingsOf, leaseTermsOf, type LeaseOptions, type LeaseSettings } from './lease-options.js';
import { RedisLeaseSource } from './redis-lease-source.js';

/** LeasedStoreOptions configures a {@link LeasedStore}: the Redis store it leases from, and the lease settings. */
export interface LeasedStoreOptions extends LeaseOptions {
  /** The store whose Redis (or Redis Cluster), deadline, circuits and failure policy the leases use. */
  store: RedisStore;
}

/**
 * LeasedStore is a {@link Store} whose policies are decided from quota leases on a
 * {@link RedisStore}'s Redis: each process takes units of a key's limit atomically from the shared
 * state (one Lua script, on the server's clock), admits requests from them with no round trip,
 * and renews ahead of need in the background. Per-request decisions (the `RedisStore` itself) stay
 * the exact default; a lease trades a bounded over-admission for round trips:
 * see {@link LeaseOptions} and `leaseOverAdmission` for the bound of each setting.
 *
 * Leasing and non-leasing processes may share a key: leases are taken from the same state
 * per-request decisions use. Policies: token bucket, leaky bucket, GCRA and fixed window; binding
 * another throws `INVALID_OPTION`. While Redis is away, a request the units held cannot pay for is
 * decided by the store's `onError` (units already held are still spent until their lease ends).
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { Limiter, tokenBucket } from 'floodgate';
 * import { LeasedStore, RedisStore, ioredisAdapter } from 'floodgate/redis';
 * const redis = new RedisStore({ adapter: ioredisAdapter(new Redis()) });
 * const store = new LeasedStore({ store: redis, leaseMs: 1000, maxOutstandingShare: 0.02 });
 * const api = new Limiter({ policy: tokenBucket({ capacity: 10_000, refillPerSecond: 10_000 }), store });
 * const decision = await api.consume('global');   // mostly no round trip at all
 * process.on('SIGTERM', () => void store.close()); // gives every unspent unit back
 */
export class LeasedStore implements Store {
  private readonly tables = new Bindings<LeasedTable>();
  private readonly settings: LeaseSettings;
  private readonly redis: RedisStore;

  constructor(options: LeasedStoreOptions) {
    const store = (options as Partial<LeasedStoreOptions> | undefined)?.store;
    if (typeof store !== 'object' || store === null || typeof (store as RedisStore).shares !== 'function')
      throw new FloodgateError(
        'INVALID_OPTION',
        'LeasedStore.store must be a RedisStore: leases are taken from its Redis',
        'LeasedStore.store',
      );
    this.settings = leaseSettingsOf(options, 'LeasedStore');
    this.redis = store;
  }

  /** bind returns the leased table of `algorithm`, made on first use; it throws `INVALID_OPTION` for a policy leases cannot run. */
  bind(algorithm: Algorithm): LeasedTable {
    return this.tables.bind(algorithm, () => {
      const terms = leaseTermsOf(algorithm, this.settings);
      const shares = this.redis.shares();
      const direct = this.redis.bind(algorithm);
      return new LeasedTable({
        policy: algorithm,
        source: new RedisLeaseSource(shares, algorithm, terms),
        direct,
        settings: this.settings,
        terms,
        clock: shares.clock,
        timers: shares.timers,
        checkKey: (key) => void direct.entryOf(key),
      });
    });
  }

  /** release undoes one bind; the last one gives the table's units back (a closed limiter's). */
  release(algorithm: Algorithm): void {
    void this.tables.release(algorithm)?.close();
  }

  /** close gives back every unit of every table and resolves once Redis has answered (or failed); for shutdown. */
  async close(): Promise<void> {
    await Promise.all(this.tables.drain().map((table) => table.close()));
  }
}
