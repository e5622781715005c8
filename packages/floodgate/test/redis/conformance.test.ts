import { createClient } from 'redis';
import { RedisStore, ioredisAdapter, nodeRedisAdapter } from '../../src/stores/redis/index.js';
import { runConformance } from '../conformance/suite.js';
import { beforeStop, useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

// The shared conformance tables against a real Redis, in test mode (the tables give the times),
// through both clients. Each run uses its own prefix, so runs never see each other's keys.
const get = useRedis();
const connect = () => createClient({ socket: { host: '127.0.0.1', port: get().servers.ports[0]! } }).connect();
let nodeRedis: ReturnType<typeof connect> | undefined;

/** The node-redis client, connected on first use (the server starts in a before hook). */
function nodeRedisClient(): ReturnType<typeof connect> {
  nodeRedis ??= connect();
  return nodeRedis;
}
beforeStop(async () => (await nodeRedis)?.quit());

runConformance('redis store (ioredis)', (algorithm) =>
  new RedisStore({
    timeoutMs: DECIDES,
    adapter: ioredisAdapter(get().client),
    prefix: 'conf-io-0:',
    unsafeTestTime: true,
  }).bind(algorithm),
);
runConformance(
  'redis store (ioredis)',
  (algorithm) =>
    new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'conf-io-epoch:',
      unsafeTestTime: true,
    }).bind(algorithm),
  { baseMs: 1_728_000_000_000 },
);
runConformance(
  'redis store (node-redis)',
  async (algorithm) =>
    new RedisStore({
      timeoutMs: DECIDES,
      adapter: nodeRedisAdapter(await nodeRedisClient()),
      prefix: 'conf-nr-epoch:',
      unsafeTestTime: true,
    }).bind(algorithm),
  { baseMs: 1_728_000_000_000 },
);
