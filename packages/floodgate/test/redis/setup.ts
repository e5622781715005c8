import { Redis, Cluster } from 'ioredis';
import { after, before } from 'node:test';
import { disconnectIoredis } from '../../src/stores/redis/index.js';
import { startRedisCluster, startRedisServer, type RedisServers } from '../support/redis-server.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];

/** beforeStop registers `cleanup` (closing another client, say) to run before the servers stop. */
export function beforeStop(cleanup: () => Promise<unknown> | unknown): void {
  cleanups.push(cleanup);
}

async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0)) await cleanup();
}

/** Servers is what {@link useRedis} and {@link useRedisCluster} hand a test file once started. */
export interface Servers {
  servers: RedisServers;
  client: Redis | Cluster;
}

/**
 * useRedis starts a redis-server before the file's tests and stops it after; `get()` returns the
 * server and an ioredis client to it (valid from the first test on).
 */
export function useRedis(): () => Servers & { client: Redis } {
  let state: (Servers & { client: Redis }) | undefined;
  before(async () => {
    const servers = await startRedisServer();
    state = { servers, client: new Redis({ port: servers.ports[0]!, host: '127.0.0.1' }) };
  });
  after(async () => {
    await runCleanups();
    state?.client.disconnect();
    await state?.servers.stop();
  });
  return () => {
    if (state === undefined) throw new Error('the Redis server is not started yet: call get() inside a test');
    return state;
  };
}

/** useRedisCluster is {@link useRedis} for a six-node Redis Cluster, with an ioredis `Cluster` client. */
export function useRedisCluster(): () => Servers & { client: Cluster } {
  let state: (Servers & { client: Cluster }) | undefined;
  before(async () => {
    const servers = await startRedisCluster();
    const client = new Cluster(servers.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })));
    state = { servers, client };
  });
  after(async () => {
    await runCleanups();
    if (state !== undefined) await disconnectIoredis(state.client);
    await state?.servers.stop();
  });
  return () => {
    if (state === undefined) throw new Error('the Redis Cluster is not started yet: call get() inside a test');
    return state;
  };
}
