/**
 * `floodgate ratelimit`: the rate limit service alone, for people who only want Envoy's rate limit
 * service (and the JSON API) from Envoy descriptor files, on the memory store or on Redis, with its
 * own metrics, health that can follow the store, and reload on file change or SIGHUP.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import {
  formatConfigError,
  mergeDescriptorConfigs,
  parseDescriptorConfig,
  type DescriptorConfig,
} from '../ratelimit/service/config.js';
import { DRAFT_HEADERS, namedResponseHeaders, type ResponseHeaders } from '../ratelimit/service/headers.js';
import { RateLimitMetrics } from '../ratelimit/service/metrics.js';
import { startRateLimitServers, type GrpcTls } from '../ratelimit/service/servers.js';
import { createRateLimitService, type RateLimitService } from '../ratelimit/service/service.js';
import {
  failureOf,
  redisStore,
  StoreState,
  UsageError,
  type RedisAccess,
  type RedisFailure,
} from './ratelimit-store.js';
import { watchFiles } from './watch-files.js';

/** RatelimitFlags are `floodgate ratelimit`'s options. */
export interface RatelimitFlags {
  /** Envoy descriptor files (several: a domain may be defined once). */
  readonly config: readonly string[];
  /** The gRPC port (Envoy's RateLimitService); with neither port given, 8081. */
  readonly grpcPort?: number | undefined;
  /** The JSON API's port; with neither port given, 8080. */
  readonly httpPort?: number | undefined;
  /** Prometheus metrics at `GET /metrics` on this port; none when omitted. */
  readonly metricsPort?: number | undefined;
  readonly host?: string | undefined;
  /** One Redis, as `host:port` or `redis://host:port`. */
  readonly redis?: string | undefined;
  /** A Redis Cluster, as `host:port,host:port`. */
  readonly redisCluster?: string | undefined;
  /** The name of an environment variable holding Redis's password (when the address gives none). */
  readonly redisPasswordEnv?: string | undefined;
  /** A PEM CA file to trust for `rediss://`. */
  readonly redisTlsCa?: string | undefined;
  /** What a Redis failure answers: local (default), fail-open, fail-closed or throw. */
  readonly onStoreError?: string | undefined;
  /** The Redis store's timeout, in ms; omitted, the library's adaptive one. */
  readonly storeTimeoutMs?: string | number | undefined;
  /** `draft` (default), `off`, `ratelimit` (Envoy's RateLimit-Limit/-Remaining/-Reset), `x-ratelimit`, or three names `L,R,T`. */
  readonly responseHeaders?: string | undefined;
  /** `auto` (default: NOT_SERVING while Redis is away and failures are thrown), `always` or `never`. */
  readonly healthFollowsStore?: string | undefined;
  /** Every limit in shadow mode (Envoy's `SHADOW_MODE`). */
  readonly shadowMode?: boolean | undefined;
  /** Reload when a descriptor file changes (default true; SIGHUP reloads either way). */
  readonly watch?: boolean | undefined;
  /** PEM certificate (chain) and key files: TLS on the gRPC listener. */
  readonly grpcTlsCert?: string | undefined;
  readonly grpcTlsKey?: string | undefined;
  /** A PEM CA file: gRPC clients must present a certificate it signed (mutual TLS). */
  readonly grpcTlsClientCa?: string | undefined;
  /** A domain may span several files, its descriptors merged (envoyproxy/ratelimit's `MERGE_DOMAIN_CONFIG`). */
  readonly mergeDomains?: boolean | undefined;
  /** Only read the configs, print their domains, and stop. */
  readonly check?: boolean | undefined;
}

/** RatelimitIo is where `floodgate ratelimit` writes, and the process signals it listens to. */
export interface RatelimitIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly signals: Pick<NodeJS.Process, 'on' | 'once'>;
}

/**
 * loadDescriptorPaths reads and merges every descriptor file, or returns every error found as
 * `file:line:column: path: message`; `mergeDomains` lets a domain span files (`--merge-domains`).
 */
export function loadDescriptorPaths(
  paths: readonly string[],
  options: { readonly mergeDomains?: boolean } = {},
): { config: DescriptorConfig } | { errors: string[] } {
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
  const merged = mergeDescriptorConfigs(parsed, options);
  if ('errors' in merged) errors.push(...merged.errors.map(formatConfigError));
  return errors.length > 0 || 'errors' in merged ? { errors } : merged;
}

function reload(
  service: RateLimitService,
  flags: RatelimitFlags,
  io: { readonly stderr: NodeJS.WritableStream; readonly metrics: RateLimitMetrics },
): void {
  const loaded = loadDescriptorPaths(flags.config, { mergeDomains: flags.mergeDomains === true });
  io.metrics.configLoad(!('errors' in loaded));
  if ('errors' in loaded) {
    io.stderr.write(`config reload refused, still serving the previous config:\n${loaded.errors.join('\n')}\n`);
    return;
  }
  service.reload(loaded.config.domains);
  io.stderr.write(`config reloaded: ${loaded.config.domains.map((d) => d.domain).join(', ')}\n`);
}

/** headersOf returns what `--response-headers` asks for, or throws a {@link UsageError}. */
export function headersOf(given: string | undefined): ResponseHeaders {
  if (given === undefined) return DRAFT_HEADERS;
  const headers = namedResponseHeaders(given);
  if (headers !== undefined) return headers;
  throw new UsageError(
    `--response-headers must be draft, off, ratelimit, x-ratelimit, or three field names "Limit,Remaining,Reset", got ${JSON.stringify(given)}`,
  );
}

/** HealthPolicy is `--health-follows-store`: when the service reports NOT_SERVING because its store is away. */
type HealthPolicy = 'auto' | 'always' | 'never';

function healthPolicyOf(given: string | undefined): HealthPolicy {
  const policy = given ?? 'auto';
  if (policy === 'auto' || policy === 'always' || policy === 'never') return policy;
  throw new UsageError(`--health-follows-store must be auto, always or never, got ${JSON.stringify(given)}`);
}

/**
 * servingWhen returns whether the service is serving with the store `up` or not: `never` ignores
 * the store, `always` follows it (envoyproxy/ratelimit's `REDIS_HEALTH_CHECK_ACTIVE_CONNECTION`),
 * `auto` follows it only when a store failure fails the decisions (`--on-store-error throw`).
 */
function servingWhen(up: boolean, policy: HealthPolicy, failure: RedisFailure): boolean {
  if (up || policy === 'never') return true;
  return policy === 'auto' && failure.onError !== 'throw';
}

function pemOf(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** redisAccessOf returns the password (`--redis-password-env`) and CA (`--redis-tls-ca`) the flags give for Redis. */
function redisAccessOf(flags: RatelimitFlags): RedisAccess {
  const name = flags.redisPasswordEnv;
  const password = name === undefined ? undefined : process.env[name];
  if (name !== undefined && (password === undefined || password === ''))
    throw new UsageError(`--redis-password-env names ${name}, which is not set (or empty) in the environment`);
  return {
    password,
    caPem: flags.redisTlsCa === undefined ? undefined : pemOf(flags.redisTlsCa, '--redis-tls-ca'),
  };
}

/** grpcTlsOf returns the gRPC listener's TLS from the `--grpc-tls-*` flags, or undefined for plaintext. */
function grpcTlsOf(flags: RatelimitFlags): GrpcTls | undefined {
  const { grpcTlsCert: cert, grpcTlsKey: key, grpcTlsClientCa: ca } = flags;
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (cert === undefined || key === undefined)
    throw new UsageError('--grpc-tls-cert and --grpc-tls-key go together (and --grpc-tls-client-ca needs both)');
  return {
    certPem: pemOf(cert, '--grpc-tls-cert'),
    keyPem: pemOf(key, '--grpc-tls-key'),
    ...(ca === undefined ? {} : { clientCaPem: pemOf(ca, '--grpc-tls-client-ca') }),
  };
}

function listenMetrics(metrics: RateLimitMetrics, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('metrics are at GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  return new Promise((done, fail) => {
    server.once('error', (error) => fail(new Error(`cannot listen for metrics on ${host}:${port}: ${error.message}`)));
    server.listen(port, host, () => done(server));
  });
}

/**
 * runRatelimit runs the rate limit service until SIGTERM or SIGINT and resolves with the exit
 * code: 0 after a clean stop (or a good `--check`), 2 for a bad config or flag. Once it listens it
 * prints `{"ready":true,"grpcPort":N,"httpPort":M,"metricsPort":P}`; a change to a descriptor file
 * (unless `watch: false`) and SIGHUP read the configs again (a config with errors is refused and
 * the previous one kept).
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
        : `rate limit service failed to start: ${(error as Error).message}\n`,
    );
    return 2;
  }
}

async function serve(flags: RatelimitFlags, io: RatelimitIo): Promise<number> {
  if (flags.config.length === 0) throw new UsageError('--config <file.yaml> is required (repeat it for several files)');
  const loaded = loadDescriptorPaths(flags.config, { mergeDomains: flags.mergeDomains === true });
  if ('errors' in loaded) throw new UsageError(loaded.errors.join('\n'));
  const { domains } = loaded.config;
  if (flags.check === true) {
    io.stdout.write(
      `${flags.config.join(', ')}: ${domains.length} domain(s): ${domains.map((d) => d.domain).join(', ')}\n`,
    );
    return 0;
  }
  const failure = failureOf(flags);
  const grpcTls = grpcTlsOf(flags);
  const policy = healthPolicyOf(flags.healthFollowsStore);
  const metrics = new RateLimitMetrics();
  metrics.configLoad(true);
  const made: { service?: RateLimitService } = {};
  const state = new StoreState((up) => {
    metrics.store(up);
    made.service?.health.set(servingWhen(up, policy, failure));
  });
  const address = flags.redisCluster ?? flags.redis;
  const redis =
    address === undefined
      ? undefined
      : await redisStore({
          address,
          cluster: flags.redisCluster !== undefined,
          failure,
          observer: state.observer,
          access: redisAccessOf(flags),
        });
  const service = createRateLimitService({
    domains,
    store: redis?.store,
    onOutcome: (o) => metrics.outcome(o),
    onRequest: (answer) => metrics.request(answer),
    shadowMode: flags.shadowMode === true,
    responseHeaders: headersOf(flags.responseHeaders),
  });
  made.service = service;
  const host = flags.host ?? '127.0.0.1';
  const neither = flags.grpcPort === undefined && flags.httpPort === undefined;
  const servers = await startRateLimitServers({
    service,
    grpcPort: neither ? 8081 : flags.grpcPort,
    httpPort: neither ? 8080 : flags.httpPort,
    host,
    ...(grpcTls === undefined ? {} : { grpcTls }),
  });
  const metricsServer =
    flags.metricsPort === undefined ? undefined : await listenMetrics(metrics, host, flags.metricsPort);
  const metricsPort = metricsServer === undefined ? null : (metricsServer.address() as AddressInfo).port;
  io.stdout.write(
    `${JSON.stringify({ ready: true, grpcPort: servers.grpcPort ?? null, httpPort: servers.httpPort ?? null, metricsPort })}\n`,
  );
  const reloadNow = (): void => reload(service, flags, { stderr: io.stderr, metrics });
  const paths = flags.config.map((p) => resolve(p));
  const stopWatching = flags.watch === false ? () => undefined : watchFiles(() => paths, reloadNow);
  io.signals.on('SIGHUP', reloadNow);
  await new Promise<void>((done) => {
    io.signals.once('SIGTERM', done);
    io.signals.once('SIGINT', done);
  });
  stopWatching();
  await Promise.all([servers.close(), metricsServer === undefined ? undefined : closeServer(metricsServer)]);
  redis?.close();
  return 0;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => done());
    server.closeIdleConnections();
  });
}
