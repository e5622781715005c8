/**
 * The sides the chaos bench compares, each as a user would set it up, and how each one's answers
 * are told apart: decided by Redis, decided some other way (a failure policy, a fallback, an
 * insurance limiter), or an error reaching the caller.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { RLWrapperTimeouts, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { Limiter, tokenBucket, type Decision } from 'floodgate';
import { RedisStore, ioredisAdapter, type RedisStoreOptions } from 'floodgate/redis';

/**
 * SideName names a side: floodgate at its defaults (on ioredis's defaults), the same with a client
 * that reconnects every 50 ms instead of backing off, floodgate at its old defaults,
 * rate-limiter-flexible hardened.
 */
export type SideName = 'floodgate' | 'floodgate+retry50' | 'floodgate-old' | 'rlf-hardened';

/** SIDES lists every side, in table order. */
export const SIDES: readonly SideName[] = ['floodgate', 'floodgate+retry50', 'floodgate-old', 'rlf-hardened'];

/** Outcome of one decision: Redis decided it, something else did, or the caller got an error. */
export const REDIS = 0;
export const DEGRADED = 1;
export const ERROR = 2;
export type Outcome = typeof REDIS | typeof DEGRADED | typeof ERROR;

/** Answer is one settled decision: its outcome and the reason the library gave (for the tallies). */
export interface Answer {
  readonly outcome: Outcome;
  readonly reason: string;
}

/** A limit far above the load (2,000 decisions/s over 100 keys), so refusals never dominate. */
const POINTS_PER_SECOND = 1_000_000;
const POLICY = tokenBucket({ capacity: POINTS_PER_SECOND, refillPerSecond: POINTS_PER_SECOND });
/** rate-limiter-flexible's own advice: no offline queue, so a command fails at once while disconnected. */
const RLF_CLIENT: RedisOptions = { enableOfflineQueue: false };
/**
 * ioredis backs off between reconnections (50 ms more each time, up to 2 s), so after an outage of
 * a few seconds it may not try again for several hundred ms after Redis is back; this retries
 * every 50 ms instead (on a cluster, for each node and for the cluster's own reconnection).
 */
const RETRY_50: RedisOptions = { retryStrategy: () => 50 };

/** Target is the Redis a side talks to: one server's port, or a cluster's masters. */
export interface Target {
  readonly cluster: boolean;
  readonly ports: readonly number[];
}

/** SideClient is a side's decide function and its client. */
export interface SideClient {
  readonly client: Redis | Cluster;
  decide(key: string): Promise<Answer>;
}

/** clientOf connects to `target` with `options` (plain ioredis defaults when empty). */
export function clientOf(target: Target, options: RedisOptions = {}): Redis | Cluster {
  const nodes = target.ports.map((port) => ({ host: '127.0.0.1', port }));
  const clusterOptions: ClusterOptions =
    Object.keys(options).length === 0
      ? {}
      : { redisOptions: options, ...(options.retryStrategy === undefined ? {} : { clusterRetryStrategy: () => 50 }) };
  const client = target.cluster ? new Cluster(nodes, clusterOptions) : new Redis({ ...nodes[0]!, ...options });
  client.on('error', () => {}); // what a user's logger would hear; the limiters answer meanwhile
  return client;
}

/** floodgateSide decides through a RedisStore with `options` on top of the defaults. */
export function floodgateSide(
  client: Redis | Cluster,
  prefix: string,
  options: Partial<RedisStoreOptions> = {},
): SideClient {
  const store = new RedisStore({ adapter: ioredisAdapter(client), prefix, ...options });
  const limiter = new Limiter({ policy: POLICY, store });
  const answer = (d: Decision): Answer => ({
    outcome: d.reason === 'ok' || d.reason === 'limit' ? REDIS : DEGRADED,
    reason: d.reason,
  });
  return {
    client,
    decide: (key) => limiter.consume(key).then(answer, (e: unknown) => ({ outcome: ERROR, reason: errorName(e) })),
  };
}

/**
 * rlfSide is rate-limiter-flexible "hardened": RateLimiterRedis with an insurance
 * RateLimiterMemory, inside its own RLWrapperTimeouts at 100 ms. The insurance limiter's answers
 * are marked, so they count as not decided by Redis.
 */
export function rlfSide(client: Redis | Cluster, prefix: string): SideClient {
  const insurance = new RateLimiterMemory({ points: POINTS_PER_SECOND, duration: 1 });
  const insured = new WeakSet<object>();
  const consume = insurance.consume.bind(insurance);
  insurance.consume = (key, points, options) =>
    consume(key, points, options).then(
      (res) => (insured.add(res), res),
      (res: unknown) => {
        if (typeof res === 'object' && res !== null) insured.add(res);
        throw res;
      },
    );
  const redis = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: prefix,
    points: POINTS_PER_SECOND,
    duration: 1,
    insuranceLimiter: insurance,
  });
  const limiter = new RLWrapperTimeouts({ limiter: redis, timeoutMs: 100 });
  const answer = (res: unknown): Answer => {
    const fromInsurance = typeof res === 'object' && res !== null && insured.has(res);
    return { outcome: fromInsurance ? DEGRADED : REDIS, reason: fromInsurance ? 'insurance' : 'redis' };
  };
  return {
    client,
    decide: (key) =>
      limiter
        .consume(key)
        .then(answer, (e: unknown) =>
          e instanceof RateLimiterRes ? answer(e) : { outcome: ERROR, reason: errorName(e) },
        ),
  };
}

/** sideOf builds side `name` on `target`, with its own client. */
export function sideOf(name: SideName, target: Target): SideClient {
  const prefix = `chaos-${name}-${process.pid}:`;
  if (name === 'rlf-hardened') return rlfSide(clientOf(target, RLF_CLIENT), prefix);
  const client = clientOf(target, name === 'floodgate+retry50' ? RETRY_50 : {});
  // The "before" figure: the defaults until issue 20, spelled out.
  return floodgateSide(client, prefix, name === 'floodgate-old' ? { timeoutMs: 1000, onError: 'fail-open' } : {});
}

function errorName(e: unknown): string {
  if (e instanceof Error) return `error: ${(e as { code?: string }).code ?? e.message.slice(0, 60)}`;
  return `error: ${String(e)}`;
}

/** ready resolves once `client` is connected (and, for a cluster, knows its slots). */
export function ready(client: Redis | Cluster): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => client.once('ready', () => resolve()));
}
