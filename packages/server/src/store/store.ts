/**
 * The gateway's store from config: one memory store for this process, or a Redis store (one
 * server or a cluster, through ioredis) shared by every gateway on it.
 */
import { MemoryStore, type Observer, type Store } from 'floodgate';
import type { StoreConfig } from '../config/schema.js';

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
}

interface IoredisLike {
  ping(): Promise<string>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** StoreSeams are what {@link openStore} needs besides the config. */
export interface StoreSeams {
  readonly env: NodeJS.ProcessEnv;
  /** Hears every Redis round trip, failure and circuit change (for metrics). */
  readonly observer: Observer;
  /** Hears connection errors of the Redis client. */
  onBackendError(err: Error): void;
}

/**
 * openStore returns the store a config names. Redis connections are made lazily by ioredis, and
 * retried every 100 ms while Redis is away, so the gateway recovers within a fraction of a second.
 */
export async function openStore(config: StoreConfig, seams: StoreSeams): Promise<GatewayStore> {
  const { env, observer, onBackendError } = seams;
  if (config.type === 'memory') {
    const store = new MemoryStore(config.maxKeys === undefined ? {} : { maxKeys: config.maxKeys });
    return { store, kind: 'memory', ping: async () => {}, close: async () => {}, memoryRisks: async () => [] };
  }
  const { Redis, Cluster } = await import('ioredis');
  const { RedisStore, ioredisAdapter } = await import('floodgate/redis');
  const password = config.passwordEnv === undefined ? undefined : env[config.passwordEnv];
  const retryStrategy = (): number => 100;
  const common = { retryStrategy, maxRetriesPerRequest: 1, enableOfflineQueue: true, ...(password === undefined ? {} : { password }) };
  const client =
    config.nodes !== undefined
      ? new Cluster(config.nodes.map(nodeOf), { clusterRetryStrategy: retryStrategy, redisOptions: { ...common, ...tlsOf(config.nodes[0]!) } })
      : new Redis(config.url!, common);
  (client as unknown as IoredisLike).on('error', onBackendError);
  const store = new RedisStore({
    adapter: ioredisAdapter(client as unknown as Parameters<typeof ioredisAdapter>[0]),
    timeoutMs: config.timeoutMs,
    onError: config.onError,
    observer,
    ...(config.prefix === undefined ? {} : { prefix: config.prefix }),
  });
  const like = client as unknown as IoredisLike;
  return {
    store,
    kind: 'redis',
    ping: (timeoutMs) => withTimeout(like.ping(), timeoutMs),
    close: async () => {
      like.disconnect();
    },
    memoryRisks: async () => (await store.checkMemory()).filter((r) => r.risk === 'evicts-limit-state' || r.risk === 'unknown').map((r) => r.message),
  };
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
    const timer = setTimeout(() => reject(new Error(`the store did not answer a ping within ${timeoutMs} ms`)), timeoutMs);
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
