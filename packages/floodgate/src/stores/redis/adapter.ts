import { FloodgateError, describeValue } from '../../core/errors.js';

/**
 * RedisAdapter is everything {@link RedisStore} asks of a Redis client: run a script by SHA1, or by
 * source when the server does not have it yet, and on a cluster which node serves a slot. Build one
 * with {@link ioredisAdapter} or {@link nodeRedisAdapter}; the store never inspects the client itself.
 */
export interface RedisAdapter {
  /**
   * cluster is true when the client talks to a Redis Cluster, where one script may only touch keys
   * of one hash slot. `consumeAll` then splits requests across slots (see {@link RedisStore.consumeAll}).
   */
  readonly cluster: boolean;
  /**
   * nodeOf returns a stable id of the master serving hash `slot` (0 to 16383), such as its
   * `host:port`, or undefined when the client does not know it (yet). Optional, and read only when
   * `cluster` is true: with it the store keeps a circuit per master, so a master that is down or
   * hung only fails the keys it serves; without it, slots share a circuit per group of 1024. It is
   * called once per script sent, so it must be cheap and never do I/O.
   */
  nodeOf?(slot: number): string | undefined;
  /** evalsha runs the script named by `sha1`; rejects with the server's error (NOSCRIPT when unknown). */
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** eval runs `script` by source (the server caches it, so EVALSHA finds it next time). */
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
}

/**
 * IoredisClient is the part of an ioredis `Redis` or `Cluster` the adapter uses. `isCluster` is
 * ioredis's own flag, true on a `Cluster`. Keys and arguments go as one array (ioredis flattens
 * it), not spread: a batch has about a thousand of them.
 */
export interface IoredisClient {
  readonly isCluster?: boolean;
  /**
   * ioredis's connection status (`connecting`, `ready`, `reconnecting`, `end`, ...). While it is
   * `close`, `reconnecting` or `end` the adapter fails a call at once instead of letting ioredis
   * queue it until the connection is back.
   */
  readonly status?: string;
  /**
   * A `Cluster`'s slot map: `slots[slot]` lists the `host:port` of the nodes serving `slot`,
   * master first (empty until the cluster is connected). Read only when `isCluster` is true.
   */
  readonly slots?: ReadonlyArray<readonly string[] | undefined>;
  /** evalsha runs the cached script `sha1` on `numKeys` keys, then arguments, as ioredis takes them. */
  evalsha(sha1: string, numKeys: number, keysAndArgs: string[]): Promise<unknown>;
  /** eval runs `script` on `numKeys` keys, then arguments, as ioredis takes them. */
  eval(script: string, numKeys: number, keysAndArgs: string[]): Promise<unknown>;
}

/**
 * ioredisAdapter returns a {@link RedisAdapter} over an ioredis client, single (`new Redis()`) or
 * cluster (`new Cluster([...])`): ioredis's `isCluster` flag tells which. On a cluster its
 * `nodeOf` reads the client's slot map (`slots[slot][0]`, the master's `host:port`).
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisStore, ioredisAdapter } from 'floodgate/redis';
 * const store = new RedisStore({ adapter: ioredisAdapter(new Redis()) });
 */
export function ioredisAdapter(client: IoredisClient): RedisAdapter {
  const cluster = client.isCluster === true;
  return {
    cluster,
    ...(cluster ? { nodeOf: (slot: number): string | undefined => client.slots?.[slot]?.[0] } : {}),
    evalsha: (sha1, keys, args) =>
      LOST.has(client.status) ? lost(client.status) : client.evalsha(sha1, keys.length, keys.concat(args)),
    eval: (script, keys, args) =>
      LOST.has(client.status) ? lost(client.status) : client.eval(script, keys.length, keys.concat(args)),
  };
}

/**
 * IoredisClosable is the part of an ioredis `Redis` or `Cluster` that {@link disconnectIoredis}
 * uses: `disconnect`, and on a `Cluster` (`isCluster`) `refreshSlotsCache`.
 */
export interface IoredisClosable {
  readonly isCluster?: boolean;
  /** disconnect closes the client's connections at once, without waiting for replies. */
  disconnect(): void;
  /** refreshSlotsCache (a `Cluster` only) reloads the slot map, calling back once it is done or failed. */
  refreshSlotsCache?(callback: (error?: Error | null) => void): void;
}

/**
 * disconnectIoredis disconnects an ioredis client so that it holds nothing open: once it resolves,
 * the client keeps no socket and no timer, and a process with nothing else to do exits.
 *
 * A `Redis` is simply disconnected. A `Cluster` needs more: ioredis (up to 6.0.0 at least) re-arms
 * its `slotsRefreshInterval` timer when a slot refresh that was in flight at `disconnect()` ends,
 * and that timer then re-arms itself forever on the empty node list, so the process never exits.
 * A refresh is in flight for a moment every few seconds, and for up to `slotsRefreshTimeout` while
 * a node is down or hung, exactly when a process is most often stopped. disconnectIoredis waits
 * for such a refresh to end, then disconnects again, which clears the re-armed timer.
 *
 * @example
 * import { Cluster } from 'ioredis';
 * import { disconnectIoredis } from 'floodgate/redis';
 * const client = new Cluster([{ host: '127.0.0.1', port: 7000 }]);
 * // ... on shutdown:
 * await disconnectIoredis(client);
 */
export async function disconnectIoredis(client: IoredisClosable): Promise<void> {
  client.disconnect();
  if (client.isCluster !== true || client.refreshSlotsCache === undefined) return;
  let answered = false;
  const ended = new Promise<void>((resolve) => {
    client.refreshSlotsCache!(() => {
      answered = true;
      resolve();
    });
  });
  // No refresh in flight: this one found no node and answered at once, and nothing was re-armed.
  if (answered) return;
  await ended; // ioredis ends a refresh within its slotsRefreshTimeout
  client.disconnect();
}

/**
 * The ioredis statuses of a connection that was lost: a call made now would wait in ioredis's
 * offline queue until the client reconnects (by default after a back-off of up to 2 s), holding its
 * caller to the store's timeout for nothing. Failed at once, such calls count against the circuit,
 * which opens within a few of them and cuts off the calls already waiting. (While a client first
 * connects, `connecting`, calls are queued as usual: it is about to answer.)
 */
const LOST: ReadonlySet<string | undefined> = new Set(['close', 'reconnecting', 'end']);

function lost(status: string | undefined): Promise<never> {
  return Promise.reject(
    new Error(`Connection is closed (ioredis status: ${String(status)}); not queued until it reconnects`),
  );
}

/** NodeRedisEvalOptions is node-redis's `{ keys, arguments }` for EVAL and EVALSHA. */
export interface NodeRedisEvalOptions {
  keys: string[];
  arguments: string[];
}

/** NodeRedisClient is the part of a node-redis client or cluster (`createClient`, `createCluster`) the adapter uses. */
export interface NodeRedisClient {
  /**
   * A cluster's slot map: `slots[slot].master.address` is the `host:port` of the master serving
   * `slot` (no entry until the cluster is connected). Read only with `{ cluster: true }`.
   */
  readonly slots?: ReadonlyArray<{ readonly master: { readonly address: string } } | undefined>;
  /** A cluster's masters (node-redis's `RedisCluster.masters`); a single client has none. Its presence tells a cluster. */
  readonly masters?: readonly unknown[];
  /** evalSha runs the cached script `sha1` with its keys and arguments, as node-redis takes them. */
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** eval runs `script` with its keys and arguments, as node-redis takes them. */
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
}

/** NodeRedisAdapterOptions configures {@link nodeRedisAdapter}. */
export interface NodeRedisAdapterOptions {
  /**
   * Whether the client is a cluster (`createCluster`). Default: told by the client itself (a
   * node-redis cluster has a `masters` list, a single client has none). `false` for a cluster is
   * refused with `INVALID_OPTION`.
   */
  cluster?: boolean;
}

/** isNodeRedisCluster returns whether `client` is a node-redis cluster: it lists its masters, as no single client does. */
function isNodeRedisCluster(client: NodeRedisClient): boolean {
  return Array.isArray(client.masters);
}

/**
 * nodeRedisAdapter returns a {@link RedisAdapter} over a node-redis client (`createClient()`) or
 * cluster (`createCluster()`), telling them apart as {@link ioredisAdapter} does: a node-redis
 * cluster exposes its `masters`, a single client does not. On a cluster, batches and `consumeAll`
 * are split by hash slot, and `nodeOf` reads the client's slot map (`slots[slot].master.address`).
 *
 * @throws FloodgateError `INVALID_OPTION` when `{ cluster: false }` is given with a cluster
 * client: every batch over keys of several slots would fail with CROSSSLOT.
 *
 * @example
 * import { createClient } from 'redis';
 * import { RedisStore, nodeRedisAdapter } from 'floodgate/redis';
 * const client = await createClient().connect();
 * const store = new RedisStore({ adapter: nodeRedisAdapter(client) });
 */
export function nodeRedisAdapter(client: NodeRedisClient, options: NodeRedisAdapterOptions = {}): RedisAdapter {
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.evalSha !== 'function' ||
    typeof client.eval !== 'function'
  ) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `nodeRedisAdapter takes a node-redis client or cluster (createClient() or createCluster()), got ${describeValue(client)}`,
      'client',
    );
  }
  const detected = isNodeRedisCluster(client);
  if (options.cluster === false && detected) {
    throw new FloodgateError(
      'INVALID_OPTION',
      'nodeRedisAdapter: the client is a node-redis cluster (it lists its masters), but { cluster: false } was given; leave cluster out or set it to true',
      'cluster',
    );
  }
  const cluster = options.cluster ?? detected;
  return {
    cluster,
    ...(cluster ? { nodeOf: (slot: number): string | undefined => client.slots?.[slot]?.master.address } : {}),
    evalsha: (sha1, keys, args) => client.evalSha(sha1, { keys: [...keys], arguments: [...args] }),
    eval: (script, keys, args) => client.eval(script, { keys: [...keys], arguments: [...args] }),
  };
}
