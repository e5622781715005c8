/**
 * `floodgate ratelimit`: the decision service alone, for people who only want Envoy's rate limit
 * service (and the JSON API) from Envoy descriptor files, on the memory store or on Redis.
 */
import { readFileSync } from 'node:fs';
import type { Store } from 'floodgate';
import {
  formatConfigError,
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type DescriptorConfig,
} from '../ratelimit/service/config.js';
import { startRateLimitServers } from '../ratelimit/service/servers.js';
import { createRateLimitService, type RateLimitService } from '../ratelimit/service/service.js';
import { FAIL_FAST_CLIENT, FAIL_FAST_CLUSTER } from '../store/store.js';

/** RatelimitFlags are `floodgate ratelimit`'s options. */
export interface RatelimitFlags {
  /** Envoy descriptor files (several: a domain may be defined once). */
  readonly config: readonly string[];
  /** The gRPC port (Envoy's RateLimitService); with neither port given, 8081. */
  readonly grpcPort?: number | undefined;
  /** The JSON API's port; with neither port given, 8080. */
  readonly httpPort?: number | undefined;
  readonly host?: string | undefined;
  /** One Redis, as `host:port` or `redis://host:port`. */
  readonly redis?: string | undefined;
  /** A Redis Cluster, as `host:port,host:port`. */
  readonly redisCluster?: string | undefined;
  /** What a Redis failure answers: local (default), fail-open, fail-closed or throw. */
  readonly onStoreError?: string | undefined;
  /** The Redis store's timeout, in ms; omitted, the library's adaptive one. */
  readonly storeTimeoutMs?: string | number | undefined;
  /** Only read the configs, print their domains, and stop. */
  readonly check?: boolean | undefined;
}

/** RatelimitIo is where `floodgate ratelimit` writes, and the process signals it listens to. */
export interface RatelimitIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly signals: Pick<NodeJS.Process, 'on' | 'once'>;
}

/** OnStoreError is `--on-store-error`: the library's local fallback (the default), or a fixed answer. */
type OnStoreError = 'local' | 'throw' | 'fail-open' | 'fail-closed';

/** loadDescriptorPaths reads and merges every descriptor file, or returns every error found as `file:line:column: path: message`. */
export function loadDescriptorPaths(paths: readonly string[]): { config: DescriptorConfig } | { errors: string[] } {
  const parsed: DescriptorConfig[] = [];
  const errors: string[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      errors.push(`${path}: cannot read: ${(error as Error).message}`);
      continue;
    }
    const result = parseDescriptorConfig(text, path);
    if ('errors' in result) errors.push(...result.errors.map(formatConfigError));
    else parsed.push(result.config);
  }
  const merged = mergeDescriptorConfigs(parsed);
  if ('errors' in merged) errors.push(...merged.errors.map(formatConfigError));
  return errors.length > 0 || 'errors' in merged ? { errors } : merged;
}

class UsageError extends Error {}

function hostPort(address: string, flag: string): { host: string; port: number } {
  const match = /^(?:rediss?:\/\/)?(.+):(\d+)\/?$/.exec(address);
  if (match === null) throw new UsageError(`${flag} must be host:port, got ${JSON.stringify(address)}`);
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

/** RedisFailure is how the store meets a Redis failure: `--on-store-error` and `--store-timeout-ms`. */
interface RedisFailure {
  readonly onError: OnStoreError;
  readonly timeoutMs: number | undefined;
}

/**
 * redisStore connects to one Redis or a Redis Cluster with the gateway's fail-fast client options,
 * on the library's defaults unless the flags say otherwise: the adaptive timeout, the bounded local
 * fallback (each service's share from the services seen on Redis) and write-back.
 */
async function redisStore(
  address: string,
  cluster: boolean,
  failure: RedisFailure,
): Promise<{ store: Store; close: () => void }> {
  const nodes = cluster
    ? address.split(',').map((a) => hostPort(a, '--redis-cluster'))
    : [hostPort(address, '--redis')];
  const { Redis, Cluster } = await import('ioredis');
  const { RedisStore, ioredisAdapter } = await import('floodgate/redis');
  const client = cluster
    ? new Cluster(nodes, { ...FAIL_FAST_CLUSTER, slotsRefreshInterval: 1000, redisOptions: FAIL_FAST_CLIENT })
    : new Redis({ ...nodes[0]!, ...FAIL_FAST_CLIENT });
  // Without a listener ioredis would print each reconnection attempt.
  client.on('error', () => undefined);
  const onError = failure.onError === 'local' ? { fallback: 'local' as const } : failure.onError;
  const store = new RedisStore({
    adapter: ioredisAdapter(client),
    onError,
    ...(failure.timeoutMs === undefined ? {} : { timeoutMs: failure.timeoutMs }),
  });
  return { store, close: () => client.disconnect() };
}

function reload(service: RateLimitService, paths: readonly string[], stderr: NodeJS.WritableStream): void {
  const loaded = loadDescriptorPaths(paths);
  if ('errors' in loaded) {
    stderr.write(`config reload refused, still serving the previous config:\n${loaded.errors.join('\n')}\n`);
    return;
  }
  service.reload(loaded.config.domains);
  stderr.write(`config reloaded: ${loaded.config.domains.map((d) => d.domain).join(', ')}\n`);
}

function failureOf(flags: RatelimitFlags): RedisFailure {
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

/**
 * runRatelimit runs the decision service until SIGTERM or SIGINT and resolves with the exit code:
 * 0 after a clean stop (or a good `--check`), 2 for a bad config or flag. Once it listens it prints
 * `{"ready":true,"grpcPort":N,"httpPort":M}`; SIGHUP reads the configs again (a config with errors
 * is refused and the previous one kept).
 *
 * @example
 * process.exitCode = await runRatelimit({ config: ['ratelimit.yaml'], grpcPort: 8081 }, { stdout: process.stdout, stderr: process.stderr, signals: process });
 */
export async function runRatelimit(flags: RatelimitFlags, io: RatelimitIo): Promise<number> {
  try {
    return await serve(flags, io);
  } catch (error) {
    io.stderr.write(
      error instanceof UsageError
        ? `${error.message}\n`
        : `decision service failed to start: ${(error as Error).message}\n`,
    );
    return 2;
  }
}

async function serve(flags: RatelimitFlags, io: RatelimitIo): Promise<number> {
  if (flags.config.length === 0) throw new UsageError('--config <file.yaml> is required (repeat it for several files)');
  const loaded = loadDescriptorPaths(flags.config);
  if ('errors' in loaded) throw new UsageError(loaded.errors.join('\n'));
  const { domains } = loaded.config;
  if (flags.check === true) {
    io.stdout.write(
      `${flags.config.join(', ')}: ${domains.length} domain(s): ${domains.map((d) => d.domain).join(', ')}\n`,
    );
    return 0;
  }
  const failure = failureOf(flags);
  const address = flags.redisCluster ?? flags.redis;
  const redis =
    address === undefined ? undefined : await redisStore(address, flags.redisCluster !== undefined, failure);
  const service = createRateLimitService({ domains, store: redis?.store });
  const neither = flags.grpcPort === undefined && flags.httpPort === undefined;
  const servers = await startRateLimitServers({
    service,
    grpcPort: neither ? 8081 : flags.grpcPort,
    httpPort: neither ? 8080 : flags.httpPort,
    host: flags.host,
  });
  io.stdout.write(
    `${JSON.stringify({ ready: true, grpcPort: servers.grpcPort ?? null, httpPort: servers.httpPort ?? null })}\n`,
  );
  io.signals.on('SIGHUP', () => reload(service, flags.config, io.stderr));
  await new Promise<void>((resolve) => {
    io.signals.once('SIGTERM', resolve);
    io.signals.once('SIGINT', resolve);
  });
  await servers.close();
  redis?.close();
  return 0;
}
