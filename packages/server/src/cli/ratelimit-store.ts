/**
 * The store of `floodgate ratelimit`: one Redis or a Redis Cluster with the gateway's fail-fast
 * client options, how a Redis failure is met (`--on-store-error`, `--store-timeout-ms`), and
 * whether the store answers (its circuits), which health and metrics follow.
 */
import type { Observer, Store } from 'floodgate';
import type { RedisAdapter } from 'floodgate/redis';
import { FAIL_FAST_CLIENT, FAIL_FAST_CLUSTER, subscriberOf, type ChannelSubscriber } from '../store/store.js';

/** UsageError is a bad flag: its message is printed as is, and the command exits with 2. */
export class UsageError extends Error {}

/** OnStoreError is `--on-store-error`: the library's local fallback (the default), or a fixed answer. */
export type OnStoreError = 'local' | 'throw' | 'fail-open' | 'fail-closed';

/** RedisFailure is how the store meets a Redis failure: `--on-store-error` and `--store-timeout-ms`. */
export interface RedisFailure {
  readonly onError: OnStoreError;
  readonly timeoutMs: number | undefined;
}

/** failureOf returns the checked `--on-store-error` and `--store-timeout-ms`, or throws a {@link UsageError}. */
export function failureOf(flags: {
  onStoreError?: string | undefined;
  storeTimeoutMs?: string | number | undefined;
}): RedisFailure {
  const onError = flags.onStoreError ?? 'local';
  if (onError !== 'local' && onError !== 'throw' && onError !== 'fail-open' && onError !== 'fail-closed')
    throw new UsageError(
      `--on-store-error must be local, fail-open, fail-closed or throw, got ${JSON.stringify(onError)}`,
    );
  const given = flags.storeTimeoutMs;
  const timeoutMs = given === undefined ? undefined : Number(given);
  if (timeoutMs !== undefined && !(timeoutMs > 0 && Number.isFinite(timeoutMs)))
    throw new UsageError(
      `--store-timeout-ms must be a number of ms above 0 (omit it for the adaptive timeout), got ${JSON.stringify(given)}`,
    );
  return { onError, timeoutMs };
}

/** RedisAddress is one `--redis` or `--redis-cluster` node: where, and how to sign in. */
interface RedisAddress {
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  /** `rediss://`: TLS to Redis. */
  readonly tls: boolean;
}

/** addressOf reads `host:port` or a `redis://` / `rediss://` URL (with `user:password@`), or throws a {@link UsageError}. */
function addressOf(text: string, flag: string): RedisAddress {
  const bad = () =>
    new UsageError(`${flag} must be host:port or redis[s]://[user:password@]host:port, got ${JSON.stringify(text)}`);
  if (!text.includes('://')) {
    const match = /^(.+):(\d+)$/.exec(text);
    if (match === null) throw bad();
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]), tls: false };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad();
  }
  if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '' || url.port === '') throw bad();
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port),
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
    tls: url.protocol === 'rediss:',
  };
}

/** RedisAccess is how to sign in to Redis beside its address: a password from the environment, a CA for TLS. */
export interface RedisAccess {
  /** The password, when the address gives none (`--redis-password-env`). */
  readonly password?: string | undefined;
  /** A PEM CA to trust for `rediss://` (`--redis-tls-ca`); the system's by default. */
  readonly caPem?: Buffer | undefined;
}

/** clientOptionsOf returns ioredis's options for signing in to `address`. */
function clientOptionsOf(address: RedisAddress, access: RedisAccess): Record<string, unknown> {
  const password = address.password ?? access.password;
  return {
    ...(address.username === undefined ? {} : { username: address.username }),
    ...(password === undefined ? {} : { password }),
    ...(address.tls ? { tls: access.caPem === undefined ? {} : { ca: access.caPem } } : {}),
  };
}

/**
 * redisStore connects to one Redis or a Redis Cluster with the gateway's fail-fast client options,
 * on the library's defaults unless the flags say otherwise: the adaptive timeout, the bounded local
 * fallback (each service's share from the services seen on Redis) and write-back.
 */
export async function redisStore(options: {
  readonly address: string;
  readonly cluster: boolean;
  readonly failure: RedisFailure;
  readonly observer: Observer;
  readonly access?: RedisAccess;
}): Promise<{
  store: Store;
  close: () => Promise<void>;
  connected: boolean;
  adapter: RedisAdapter;
  subscriber: ChannelSubscriber;
}> {
  const { address, cluster, failure } = options;
  const nodes = cluster
    ? address.split(',').map((a) => addressOf(a, '--redis-cluster'))
    : [addressOf(address, '--redis')];
  const signIn = clientOptionsOf(nodes[0]!, options.access ?? {});
  const { Redis, Cluster } = await import('ioredis');
  const { RedisStore, disconnectIoredis, ioredisAdapter } = await import('floodgate/redis');
  const client = cluster
    ? new Cluster(
        nodes.map((n) => ({ host: n.host, port: n.port })),
        { ...FAIL_FAST_CLUSTER, slotsRefreshInterval: 1000, redisOptions: { ...FAIL_FAST_CLIENT, ...signIn } },
      )
    : new Redis({ host: nodes[0]!.host, port: nodes[0]!.port, ...FAIL_FAST_CLIENT, ...signIn });
  // Without a listener ioredis would print each reconnection attempt.
  client.on('error', () => undefined);
  const connected = await readyWithin(client, CONNECT_WAIT_MS);
  const onError = failure.onError === 'local' ? { fallback: 'local' as const } : failure.onError;
  const adapter = ioredisAdapter(client);
  const store = new RedisStore({
    adapter,
    onError,
    observer: options.observer,
    ...(failure.timeoutMs === undefined ? {} : { timeoutMs: failure.timeoutMs }),
  });
  const subscriber = subscriberOf(client);
  const close = async (): Promise<void> => {
    subscriber.close();
    await disconnectIoredis(client);
  };
  return { store, close, connected, adapter, subscriber };
}

/** CONNECT_WAIT_MS is how long the service waits for Redis at start before it listens anyway (its failure policy answering meanwhile). */
export const CONNECT_WAIT_MS = 5_000;

/**
 * readyWithin resolves true once `client` is connected (and signed in), or false after `waitMs`:
 * with the offline queue off, a command sent before then would fail at once, so the service
 * listens only once Redis can be asked, or once it has waited long enough to say it cannot.
 */
function readyWithin(
  client: {
    status: string;
    once(event: 'ready', listener: () => void): unknown;
    off(event: 'ready', listener: () => void): unknown;
  },
  waitMs: number,
): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const onReady = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, waitMs);
    client.once('ready', onReady);
  });
}
