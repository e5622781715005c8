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
  type DomainSpec,
} from '../ratelimit/service/config.js';
import { RateLimitMetrics } from '../ratelimit/service/metrics.js';
import { startRateLimitServers } from '../ratelimit/service/servers.js';
import { createRateLimitService, type RateLimitService } from '../ratelimit/service/service.js';
import {
  grpcTlsOf,
  headersOf,
  healthPolicyOf,
  keyHashingOfFlags,
  redisAccessOf,
  type RatelimitFlags,
} from './ratelimit-flags.js';
import { valueHasher } from '../gateway/key-hash.js';
import { CONNECT_WAIT_MS, failureOf, redisStore, UsageError } from './ratelimit-store.js';
import { servingWhen, StoreState } from '../ratelimit/service/store-health.js';
import { watchFiles } from '../process/watch-files.js';
import { QuotaService } from '../ratelimit/quota/service.js';
import { RedisQuotaLedger } from '../ratelimit/quota/redis-ledger.js';
import { registerQuotaMetrics } from '../ratelimit/quota/metrics.js';
import type { RedisAdapter } from 'floodgate/redis';
import type { ChannelSubscriber } from '../store/store.js';

export type { RatelimitFlags } from './ratelimit-flags.js';
export { headersOf } from './ratelimit-flags.js';

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
  io: { readonly stderr: NodeJS.WritableStream; readonly metrics: RateLimitMetrics; readonly quota: QuotaService },
): void {
  const loaded = loadDescriptorPaths(flags.config, { mergeDomains: flags.mergeDomains === true });
  io.metrics.configLoad(!('errors' in loaded));
  if ('errors' in loaded) {
    io.stderr.write(`config reload refused, still serving the previous config:\n${loaded.errors.join('\n')}\n`);
    return;
  }
  service.reload(loaded.config.domains);
  io.quota.reload(loaded.config.domains);
  io.stderr.write(`config reloaded: ${loaded.config.domains.map((d) => d.domain).join(', ')}\n`);
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
  const metrics = new RateLimitMetrics();
  metrics.configLoad(true);
  const { service, redis, hideValue, unkeyed } = await buildService(flags, domains, metrics, io.stderr);
  // On Redis, every replica grants from one budget per quota bucket.
  const ledger =
    redis === undefined ? undefined : new RedisQuotaLedger({ adapter: redis.adapter, subscriber: redis.subscriber });
  const quota = new QuotaService({ domains, hideValue, ...(ledger === undefined ? {} : { ledger }) });
  registerQuotaMetrics(metrics.registry, quota);
  const listening = await listen(flags, service, metrics, quota);
  if (unkeyed)
    io.stderr.write(
      'descriptor values are hashed in store keys without a secret: pass --key-secret-env NAME, or a guessable value (a user id) can be recovered from its key\n',
    );
  io.stdout.write(`${JSON.stringify({ ready: true, ...listening.ports })}\n`);
  const reloadNow = (): void => reload(service, flags, { stderr: io.stderr, metrics, quota });
  const paths = flags.config.map((p) => resolve(p));
  const stopWatching = flags.watch === false ? () => undefined : watchFiles(() => paths, reloadNow);
  io.signals.on('SIGHUP', reloadNow);
  await new Promise<void>((done) => {
    io.signals.once('SIGTERM', done);
    io.signals.once('SIGINT', done);
  });
  stopWatching();
  // The quota service first: the streams the listeners end then keep their grants until their
  // TTL (their clients keep their assignments), rather than freeing them for others at once.
  quota.close();
  await listening.close();
  await redis?.close();
  return 0;
}

/** buildService makes the service on its store (Redis when the flags name one), its health following the store as `--health-follows-store` says. */
async function buildService(
  flags: RatelimitFlags,
  domains: readonly DomainSpec[],
  metrics: RateLimitMetrics,
  stderr: NodeJS.WritableStream,
): Promise<{
  service: RateLimitService;
  redis: { close: () => void; adapter: RedisAdapter; subscriber: ChannelSubscriber } | undefined;
  hideValue: ((value: string) => string) | undefined;
  /** Whether values are hashed without a secret (worth a warning once the service runs). */
  unkeyed: boolean;
}> {
  const failure = failureOf(flags);
  const policy = healthPolicyOf(flags.healthFollowsStore);
  const hashing = keyHashingOfFlags(flags, process.env);
  const made: { service?: RateLimitService } = {};
  const state = new StoreState((up) => {
    metrics.store(up);
    // A store away fails every decision under throw, and refuses every one under fail-closed.
    made.service?.health.set(servingWhen(up, policy, failure.onError === 'throw' || failure.onError === 'fail-closed'));
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
  if (redis?.connected === false)
    stderr.write(
      `Redis at ${address!} did not answer within ${CONNECT_WAIT_MS} ms; serving anyway, --on-store-error ${failure.onError} answering until it does\n`,
    );
  const hideValue = valueHasher(hashing);
  made.service = createRateLimitService({
    domains,
    store: redis?.store,
    ...(hideValue === undefined ? {} : { hideValue }),
    onOutcome: (o) => metrics.outcome(o),
    onRequest: (answer) => metrics.request(answer),
    shadowMode: flags.shadowMode === true,
    responseHeaders: headersOf(flags.responseHeaders),
  });
  return { service: made.service, redis, hideValue, unkeyed: hashing.hash && hashing.secret === undefined };
}

/** listen starts the gRPC, JSON and metrics listeners the flags ask for (gRPC on 8081 and JSON on 8080 when neither port is given). */
async function listen(
  flags: RatelimitFlags,
  service: RateLimitService,
  metrics: RateLimitMetrics,
  quota: QuotaService,
): Promise<{ ports: Record<string, number | null>; close: () => Promise<void> }> {
  const grpcTls = grpcTlsOf(flags);
  const host = flags.host ?? '127.0.0.1';
  const neither = flags.grpcPort === undefined && flags.httpPort === undefined;
  const servers = await startRateLimitServers({
    service,
    grpcPort: neither ? 8081 : flags.grpcPort,
    httpPort: neither ? 8080 : flags.httpPort,
    host,
    tracing: flags.tracing === true,
    quota,
    ...(grpcTls === undefined ? {} : { grpcTls }),
  });
  const metricsServer =
    flags.metricsPort === undefined ? undefined : await listenMetrics(metrics, host, flags.metricsPort);
  return {
    ports: {
      grpcPort: servers.grpcPort ?? null,
      httpPort: servers.httpPort ?? null,
      metricsPort: metricsServer === undefined ? null : (metricsServer.address() as AddressInfo).port,
    },
    close: async () => {
      await Promise.all([servers.close(), metricsServer === undefined ? undefined : closeServer(metricsServer)]);
    },
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((done) => {
    server.close(() => done());
    server.closeIdleConnections();
  });
}
