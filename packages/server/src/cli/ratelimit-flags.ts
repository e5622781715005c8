/**
 * `floodgate ratelimit`'s flags, and what they are read into: the response headers, when health
 * follows the store, TLS for the gRPC listener, and how to sign in to Redis. A bad flag is a
 * {@link UsageError} naming it.
 */
import { readFileSync } from 'node:fs';
import { HEALTH_POLICIES, type HealthPolicy } from '../ratelimit/service/store-health.js';
import { DRAFT_HEADERS, namedResponseHeaders, type ResponseHeaders } from '../ratelimit/service/headers.js';
import type { GrpcTls } from '../ratelimit/service/servers.js';
import { UsageError, type RedisAccess } from './ratelimit-store.js';

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
  /** `auto` (default: NOT_SERVING while Redis is away and decisions fail or are refused: throw, fail-closed), `always` or `never`. */
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
  /** A `ShouldRateLimit` OpenTelemetry span per request (envoyproxy/ratelimit's `TRACING_ENABLED`), sent by the SDK the process registers. */
  readonly tracing?: boolean | undefined;
  /** The environment variable holding the secret descriptor values are hashed under (16 characters or more). */
  readonly keySecretEnv?: string | undefined;
  /** Keep descriptor values raw in store keys and metric labels (by default they are hashed). */
  readonly rawValues?: boolean | undefined;
  /** Only read the configs, print their domains, and stop. */
  readonly check?: boolean | undefined;
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

/** healthPolicyOf returns what `--health-follows-store` asks for, or throws a {@link UsageError}. */
export function healthPolicyOf(given: string | undefined): HealthPolicy {
  const policy = given ?? 'auto';
  if ((HEALTH_POLICIES as readonly string[]).includes(policy)) return policy as HealthPolicy;
  throw new UsageError(`--health-follows-store must be auto, always or never, got ${JSON.stringify(given)}`);
}

/** pemOf returns a PEM file's bytes, or throws a {@link UsageError} naming `flag`. */
function pemOf(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** redisAccessOf returns the password (`--redis-password-env`) and CA (`--redis-tls-ca`) the flags give for Redis. */
export function redisAccessOf(flags: RatelimitFlags): RedisAccess {
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
export function grpcTlsOf(flags: RatelimitFlags): GrpcTls | undefined {
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

/** MIN_KEY_SECRET_LENGTH is the shortest secret `--key-secret-env` may name, as the gateway's `keys.secret`. */
const MIN_KEY_SECRET_LENGTH = 16;

/**
 * keyHashingOfFlags returns how descriptor values are hashed: raw with `--raw-values`, else under
 * the secret `--key-secret-env` names (a {@link UsageError} when it is unset or under 16
 * characters), else under no secret (stable, but a guessable value can be recovered).
 */
export function keyHashingOfFlags(
  flags: Pick<RatelimitFlags, 'keySecretEnv' | 'rawValues'>,
  env: NodeJS.ProcessEnv,
): { hash: boolean; secret: string | undefined } {
  if (flags.rawValues === true) {
    if (flags.keySecretEnv !== undefined) throw new UsageError('--raw-values and --key-secret-env exclude each other');
    return { hash: false, secret: undefined };
  }
  if (flags.keySecretEnv === undefined) return { hash: true, secret: undefined };
  const secret = env[flags.keySecretEnv];
  if (secret === undefined || secret.length < MIN_KEY_SECRET_LENGTH)
    throw new UsageError(
      `--key-secret-env ${flags.keySecretEnv}: the variable must hold a secret of ${MIN_KEY_SECRET_LENGTH} characters or more (${secret === undefined ? 'it is unset' : `it has ${secret.length}`})`,
    );
  return { hash: true, secret };
}
