/**
 * The gateway's store from config: one memory store for this process, or a Redis store (one
 * server or a cluster, through ioredis) shared by every gateway on it.
 */
import { MemoryStore, type Observer, type Store } from 'floodgate';
import type { LeasedStore, LeaseOptions, RedisAdapter, RedisSmoothLimiter, RedisStore } from 'floodgate/redis';
import type { StoreConfig } from '../config/schema.js';

/** FleetSmooth is what paces a smooth rule for every gateway on a Redis store: the store and the library's RedisSmoothLimiter. */
export interface FleetSmooth {
  readonly store: RedisStore;
  readonly limiter: typeof RedisSmoothLimiter;
}

/** GatewayStore is the store the rules share, and how to check and close its backend. */
export interface GatewayStore {
  readonly store: Store;
  /** kind names the backend: `memory` or `redis`. */
  readonly kind: 'memory' | 'redis';
  /** ping resolves when the backend answers (at once for memory), and rejects when it does not. */
  ping(timeoutMs: number): Promise<void>;
  /** close ends the backend's connections. */
  close(): Promise<void>;
  /**
   * memoryRisks resolves to a sentence per Redis master whose memory settings could evict a
   * throttled key (an evicting `maxmemory-policy`) or could not be read; empty when all is safe,
   * and always for memory.
   */
  memoryRisks(): Promise<readonly string[]>;
  /** The memory store's counts of new keys its full table could not hold, and its `maxKeys`; undefined for Redis. */
  readonly overflow?: { readonly maxKeys: number; counts(): { decided: number; refused: number } };
  /** The Redis store's smooth limiters, shared by every gateway on it; undefined for memory (smooth rules pace in this process). */
  readonly fleetSmooth?: FleetSmooth;
  /**
   * The Redis client (through the library's adapter), key prefix and a way to subscribe on a
   * connection of its own, for what else keeps state there (the RLQS ledger); undefined for memory.
   */
  readonly redis?: {
    readonly adapter: RedisAdapter;
    readonly prefix: string | undefined;
    readonly subscriber: ChannelSubscriber;
  };
  /** leased returns a store deciding from quota leases on this Redis (a rule's `lease:`); undefined for memory. */
  readonly leased?: (options: LeaseOptions) => LeasedStore;
  /**
   * registry is where the gateway processes sharing a Redis store leave a line each about
   * themselves (their dashboards list every process): one hash, `<prefix>dashboard:processes`,
   * a field per process. Undefined for memory, which no other process shares.
   */
  readonly registry?: {
    publish(id: string, entry: string): Promise<void>;
    entries(): Promise<Record<string, string>>;
    remove(ids: readonly string[]): Promise<void>;
  };
}

/** ChannelSubscriber subscribes to one channel on a connection of its own (a subscribed connection sends nothing else). */
export interface ChannelSubscriber {
  /** subscribe calls `onMessage` with each message published on `channel`; resolves once subscribed (resubscribing after a reconnection). */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** close ends the subscription's connection. */
  close(): void;
}

/** SubscribableIoredis is the part of an ioredis `Redis` or `Cluster` {@link subscriberOf} uses. */
interface SubscribableIoredis {
  duplicate(): SubscribingConnection;
}

interface SubscribingConnection {
  readonly status: string;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  once(event: 'ready' | 'end', listener: () => void): unknown;
  subscribe(channel: string): Promise<unknown>;
  disconnect(): void;
}

/**
 * subscriberOf returns a {@link ChannelSubscriber} over a duplicate of `client` (same address,
 * sign-in and options), made on the first subscription. With the offline queue off, a command
 * sent before the connection is up fails: the subscription waits for it (and tries again at each
 * reconnection until it holds); ioredis subscribes again by itself after a reconnection. The
 * duplicate's errors are heard and dropped: the client's own report the outage.
 */
export function subscriberOf(client: SubscribableIoredis): ChannelSubscriber {
  let connection: SubscribingConnection | undefined;
  let closed = false;
  return {
    subscribe: async (channel, onMessage) => {
      const c = (connection ??= client.duplicate());
      c.on('error', () => undefined);
      c.on('message', (on, message) => {
        if (on === channel) onMessage(message);
      });
      while (!closed) {
        if (c.status !== 'ready') await new Promise<void>((resolve) => c.once('ready', resolve));
        try {
          await c.subscribe(channel);
          return;
        } catch (error) {
          // Refused on a live connection (an ACL without the channel, say): no retry helps.
          if (closed || c.status === 'ready' || c.status === 'end') throw error;
        }
      }
    },
    close: () => {
      closed = true;
      connection?.disconnect();
    },
  };
}

interface IoredisLike {
  ping(): Promise<string>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * FAIL_FAST_CLIENT are the ioredis options of every Redis client the server makes: a dead Redis
 * fails fast instead of queueing. A command written while the connection is down fails at once
 * (`enableOfflineQueue: false`) rather than waiting in ioredis's queue for a reconnection that may
 * take seconds; a command whose connection drops under it is not sent again
 * (`maxRetriesPerRequest: 0`): by then the store's deadline has usually passed and its failure
 * policy has answered. The RedisStore's timeout bounds every call either way, and its circuit
 * stops sending after a few failures. Reconnecting stays quick (every 100 ms), so decisions move
 * back to Redis within a fraction of a second of it answering again.
 */
export const FAIL_FAST_CLIENT = Object.freeze({
  retryStrategy: (): number => 100,
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
});

/**
 * FAIL_FAST_CLUSTER are the ioredis Cluster options beside {@link FAIL_FAST_CLIENT} (its
 * `redisOptions`): the cluster's own offline queue is off too (ioredis keeps one per node
 * connection whatever it is told, bounded by the store's timeout), and it reconnects every 100 ms.
 */
export const FAIL_FAST_CLUSTER = Object.freeze({ clusterRetryStrategy: (): number => 100, enableOfflineQueue: false });

/** StoreSeams are what {@link openStore} needs besides the config. */
export interface StoreSeams {
  readonly env: NodeJS.ProcessEnv;
  /**
   * Whether this process is one of `floodgate serve`'s workers: the memory store is then the
   * primary's, reached through `floodgate/cluster`, so that each limit is one limit for the host.
   */
  readonly shared?: boolean;
  /** Hears every Redis round trip, failure and circuit change (for metrics). */
  readonly observer: Observer;
  /** Hears connection errors of the Redis client. */
  onBackendError(err: Error): void;
}

/**
 * openStore returns the store a config names. Redis connections are made by ioredis with
 * {@link FAIL_FAST_CLIENT}'s options, retried every 100 ms while Redis is away, so the gateway
 * recovers within a fraction of a second. The RedisStore gets the config's `timeoutMs` (omitted:
 * the library's adaptive default), `onError` (`local`: the library's bounded local fallback, the
 * default) and `writeBack`.
 */
export async function openStore(config: StoreConfig, seams: StoreSeams): Promise<GatewayStore> {
  const { env, observer, onBackendError } = seams;
  if (config.type === 'memory' && seams.shared === true) {
    const { ClusterStore } = await import('floodgate/cluster');
    const store = new ClusterStore();
    return { store, kind: 'memory', ping: async () => {}, close: () => store.close(), memoryRisks: async () => [] };
  }
  if (config.type === 'memory') {
    const store = new MemoryStore(config.maxKeys === undefined ? {} : { maxKeys: config.maxKeys });
    return {
      store,
      kind: 'memory',
      ping: async () => {},
      close: async () => {},
      memoryRisks: async () => [],
      overflow: { maxKeys: config.maxKeys ?? 1_000_000, counts: () => store.overflowCounts() },
    };
  }
  const { Redis, Cluster } = await import('ioredis');
  const { LeasedStore, RedisStore, RedisSmoothLimiter, disconnectIoredis, ioredisAdapter } =
    await import('floodgate/redis');
  const password = config.passwordEnv === undefined ? undefined : env[config.passwordEnv];
  const common = { ...FAIL_FAST_CLIENT, ...(password === undefined ? {} : { password }) };
  const client =
    config.nodes !== undefined
      ? new Cluster(config.nodes.map(nodeOf), {
          ...FAIL_FAST_CLUSTER,
          redisOptions: { ...common, ...tlsOf(config.nodes[0]!) },
        })
      : new Redis(config.url!, common);
  (client as unknown as IoredisLike).on('error', onBackendError);
  const adapter = ioredisAdapter(client as unknown as Parameters<typeof ioredisAdapter>[0]);
  const store = new RedisStore({
    adapter,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    onError: onErrorOf(config.onError),
    writeBack: config.writeBack,
    observer,
    ...(config.prefix === undefined ? {} : { prefix: config.prefix }),
  });
  const like = client as unknown as IoredisLike;
  const registryKey = `${config.prefix ?? 'floodgate:'}dashboard:processes`;
  return {
    store,
    kind: 'redis',
    fleetSmooth: { store, limiter: RedisSmoothLimiter },
    redis: { adapter, prefix: config.prefix, subscriber: subscriberOf(client as unknown as SubscribableIoredis) },
    leased: (options) => new LeasedStore({ store, ...options }),
    registry: {
      publish: async (id, entry) => void (await client.hset(registryKey, id, entry)),
      entries: () => client.hgetall(registryKey),
      remove: async (ids) => void (ids.length === 0 ? 0 : await client.hdel(registryKey, ...ids)),
    },
    ping: (timeoutMs) => withTimeout(like.ping(), timeoutMs),
    close: () => disconnectIoredis(client),
    memoryRisks: async () =>
      (await store.checkMemory())
        .filter((r) => r.risk === 'evicts-limit-state' || r.risk === 'unknown')
        .map((r) => r.message),
  };
}

type RedisStoreConfig = Extract<StoreConfig, { type: 'redis' }>;

/** onErrorOf returns the library's `onError` for the config's: `local` is the library's default `{ fallback: 'local' }`. */
function onErrorOf(
  onError: RedisStoreConfig['onError'],
): 'fail-open' | 'fail-closed' | { fallback: 'local'; nodes?: number; share?: number } {
  return onError === 'local' ? { fallback: 'local' } : onError;
}

/**
 * gatewayOnStoreError returns what the gateway answers when its store throws after all (its own
 * `onError` decides first, so this is a last resort): `fail-closed` under a fail-closed store, else
 * `fail-open`, the nearest to a local fallback that could not decide.
 */
export function gatewayOnStoreError(config: StoreConfig): 'fail-open' | 'fail-closed' {
  return config.type === 'redis' && config.onError === 'fail-closed' ? 'fail-closed' : 'fail-open';
}

function nodeOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379) };
}

function tlsOf(url: string): { tls?: object } {
  return url.startsWith('rediss://') ? { tls: {} } : {};
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the store did not answer a ping within ${timeoutMs} ms`)),
      timeoutMs,
    );
    promise.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
