/**
 * A runnable decision service: reads descriptor configs, serves Envoy's gRPC API and the JSON
 * API, on the memory store or on Redis. Prints one JSON line `{"ready":true,"grpcPort":N,"httpPort":M}`
 * once it listens; stops on SIGTERM or SIGINT.
 *
 *   node --conditions=floodgate-source --import tsx packages/server/src/decision/main.ts \
 *     --config ratelimit.yaml --grpc-port 8081 --http-port 8080 [--host 127.0.0.1]
 *     [--redis 127.0.0.1:6380 | --redis-cluster 127.0.0.1:7000,127.0.0.1:7001]
 *     [--on-store-error throw|fail-open|fail-closed] [--check]
 *
 * `--check` reads the configs, prints their domains (or every error, exiting 2) and stops. SIGHUP
 * reads the configs again and serves them, keeping every counter of an unchanged limit; a config
 * with errors is refused and the previous one kept.
 * When Redis fails, the default (`throw`) answers gRPC UNAVAILABLE (HTTP 503), so that Envoy's own
 * failure mode (`failure_mode_deny`) decides; `fail-open` and `fail-closed` answer instead.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Store } from 'floodgate';
import { formatConfigError, mergeDescriptorConfigs, parseDescriptorConfig, type DescriptorConfig } from './config.js';
import { startDecisionServers } from './servers.js';
import { createDecisionService, type DecisionService } from './service.js';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function portOf(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`${flag} must be a port number from 0 to 65535, got ${JSON.stringify(text)}`);
  return port;
}

/** loadConfigs reads and merges every config file, or returns every error found. */
function loadConfigs(paths: readonly string[]): { config: DescriptorConfig } | { errors: string[] } {
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

type OnStoreError = 'throw' | 'fail-open' | 'fail-closed';

function hostPort(address: string, flag: string): { host: string; port: number } {
  const match = /^(.+):(\d+)$/.exec(address);
  if (match === null) fail(`${flag} must be host:port, got ${JSON.stringify(address)}`);
  return { host: match[1]!, port: Number(match[2]) };
}

/** redisStore connects to one Redis (`--redis host:port`) or a Redis Cluster (`--redis-cluster host:port,host:port`). */
async function redisStore(address: string, cluster: boolean, onError: OnStoreError): Promise<{ store: Store; close: () => void }> {
  const { Redis, Cluster } = await import('ioredis');
  const { RedisStore, ioredisAdapter } = await import('floodgate/redis');
  const client = cluster
    ? new Cluster(address.split(',').map((a) => hostPort(a, '--redis-cluster')), { slotsRefreshInterval: 1000, clusterRetryStrategy: () => 100, redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ ...hostPort(address, '--redis'), maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  // Connection errors reach callers through the store (its deadline and failure policy); without a
  // listener ioredis would print each reconnection attempt.
  client.on('error', () => undefined);
  return { store: new RedisStore({ adapter: ioredisAdapter(client), timeoutMs: 500, onError }), close: () => client.disconnect() };
}

/** reload serves the configs as they are now; with any error it keeps serving the previous ones and says why. */
function reload(service: DecisionService, paths: readonly string[]): void {
  const loaded = loadConfigs(paths);
  if ('errors' in loaded) {
    process.stderr.write(`config reload refused, still serving the previous config:\n${loaded.errors.join('\n')}\n`);
    return;
  }
  service.reload(loaded.config.domains);
  process.stderr.write(`config reloaded: ${loaded.config.domains.map((d) => d.domain).join(', ')}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: 'string', multiple: true },
      'grpc-port': { type: 'string' },
      'http-port': { type: 'string' },
      host: { type: 'string' },
      redis: { type: 'string' },
      'redis-cluster': { type: 'string' },
      'on-store-error': { type: 'string' },
      check: { type: 'boolean' },
    },
  });
  if (values.config === undefined || values.config.length === 0) fail('--config <file.yaml> is required (repeat it for several files)');
  const paths = values.config;
  const loaded = loadConfigs(paths);
  if ('errors' in loaded) fail(loaded.errors.join('\n'));
  const config = loaded.config;
  if (values.check === true) {
    process.stdout.write(`${values.config.join(', ')}: ${config.domains.length} domain(s): ${config.domains.map((d) => d.domain).join(', ')}\n`);
    return;
  }
  const onError = values['on-store-error'] ?? 'throw';
  if (onError !== 'throw' && onError !== 'fail-open' && onError !== 'fail-closed') fail(`--on-store-error must be throw, fail-open or fail-closed, got ${JSON.stringify(onError)}`);
  const redisAddress = values['redis-cluster'] ?? values.redis;
  const redis = redisAddress === undefined ? undefined : await redisStore(redisAddress, values['redis-cluster'] !== undefined, onError);
  const service = createDecisionService({ domains: config.domains, store: redis?.store });
  const servers = await startDecisionServers({ service, grpcPort: portOf(values['grpc-port'], '--grpc-port'), httpPort: portOf(values['http-port'], '--http-port'), host: values.host });
  process.stdout.write(`${JSON.stringify({ ready: true, grpcPort: servers.grpcPort ?? null, httpPort: servers.httpPort ?? null })}\n`);
  const stop = (): void => {
    void servers.close().then(() => {
      redis?.close();
      process.exit(0);
    });
  };
  process.on('SIGHUP', () => reload(service, paths));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error: unknown) => fail(`decision service failed to start: ${(error as Error).message}`));
