/**
 * A runnable rate limit service, kept for scripts and tests that start it by path; `floodgate
 * ratelimit` is the same program (see `src/cli/ratelimit.ts`). Prints one JSON line
 * `{"ready":true,"grpcPort":N,"httpPort":M}` once it listens; stops on SIGTERM or SIGINT.
 *
 *   node --conditions=floodgate-source --import tsx packages/server/src/cli/ratelimit-main.ts \
 *     --config ratelimit.yaml --grpc-port 8081 --http-port 8080 [--host 127.0.0.1]
 *     [--redis 127.0.0.1:6380 | --redis-cluster 127.0.0.1:7000,127.0.0.1:7001] [--redis-password-env NAME] [--redis-tls-ca ca.pem]
 *     [--on-store-error local|fail-open|fail-closed|throw] [--store-timeout-ms 50] [--metrics-port 9102]
 *     [--response-headers draft|off|ratelimit|x-ratelimit|L,R,T] [--health-follows-store auto|always|never]
 *     [--shadow-mode] [--merge-domains] [--tracing] [--no-watch] [--grpc-tls-cert cert.pem --grpc-tls-key key.pem [--grpc-tls-client-ca ca.pem]]
 *     [--key-secret-env NAME | --raw-values] [--check]
 */
import { parseArgs } from 'node:util';
import { runRatelimit } from './ratelimit.js';

function portOf(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`${flag} must be a port number from 0 to 65535, got ${JSON.stringify(text)}\n`);
    process.exit(2);
  }
  return port;
}

const { values } = parseArgs({
  options: {
    config: { type: 'string', multiple: true },
    'grpc-port': { type: 'string' },
    'http-port': { type: 'string' },
    host: { type: 'string' },
    redis: { type: 'string' },
    'redis-cluster': { type: 'string' },
    'redis-password-env': { type: 'string' },
    'redis-tls-ca': { type: 'string' },
    'on-store-error': { type: 'string' },
    'store-timeout-ms': { type: 'string' },
    'metrics-port': { type: 'string' },
    'response-headers': { type: 'string' },
    'health-follows-store': { type: 'string' },
    'shadow-mode': { type: 'boolean' },
    'no-watch': { type: 'boolean' },
    'merge-domains': { type: 'boolean' },
    tracing: { type: 'boolean' },
    'grpc-tls-cert': { type: 'string' },
    'grpc-tls-key': { type: 'string' },
    'grpc-tls-client-ca': { type: 'string' },
    'key-secret-env': { type: 'string' },
    'raw-values': { type: 'boolean' },
    check: { type: 'boolean' },
  },
});
const code = await runRatelimit(
  {
    config: values.config ?? [],
    grpcPort: portOf(values['grpc-port'], '--grpc-port'),
    httpPort: portOf(values['http-port'], '--http-port'),
    host: values.host,
    redis: values.redis,
    redisCluster: values['redis-cluster'],
    redisPasswordEnv: values['redis-password-env'],
    redisTlsCa: values['redis-tls-ca'],
    onStoreError: values['on-store-error'],
    storeTimeoutMs: values['store-timeout-ms'],
    metricsPort: portOf(values['metrics-port'], '--metrics-port'),
    responseHeaders: values['response-headers'],
    healthFollowsStore: values['health-follows-store'],
    shadowMode: values['shadow-mode'],
    watch: values['no-watch'] !== true,
    mergeDomains: values['merge-domains'],
    tracing: values.tracing,
    grpcTlsCert: values['grpc-tls-cert'],
    grpcTlsKey: values['grpc-tls-key'],
    grpcTlsClientCa: values['grpc-tls-client-ca'],
    keySecretEnv: values['key-secret-env'],
    rawValues: values['raw-values'],
    check: values.check,
  },
  { stdout: process.stdout, stderr: process.stderr, signals: process },
);
process.exit(code);
