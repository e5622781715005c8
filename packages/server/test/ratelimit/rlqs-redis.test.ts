import { describe } from 'node:test';
import { ioredisAdapter } from 'floodgate/redis';
import { useRedis } from '../../../floodgate/test/redis/setup.js';
import { redisLedgerChecks, twoServiceReplicas, type LedgerRedis } from './rlqs-redis-checks.js';

describe('RLQS on a real Redis', () => {
  const redis = useRedis();
  const onRedis = (): LedgerRedis => {
    const { client, servers } = redis();
    return {
      adapter: ioredisAdapter(client),
      keys: (pattern) => client.keys(pattern),
      hget: (key, field) => client.hget(key, field),
      flushall: () => client.flushall(),
      flags: ['--redis', `127.0.0.1:${servers.ports[0]!}`],
    };
  };
  redisLedgerChecks(onRedis);
  twoServiceReplicas(onRedis);
});
