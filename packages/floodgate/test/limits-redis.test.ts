import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Limiter, consumeAll, fixedWindow, gcra, type Store } from '../src/index.js';
import { RedisStore, ioredisAdapter } from '../src/redis.js';
import { useRedis } from './redis/setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const redis = useRedis();

/** The RedisStore, with a count of its consumeAll calls (the one-script path). */
function countingStore(prefix: string): { store: RedisStore; batches: () => number } {
  const store = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(redis().client), prefix });
  let batches = 0;
  const consumeAllOf = store.consumeAll.bind(store);
  store.consumeAll = (requests, nowMs) => {
    batches++;
    return consumeAllOf(requests, nowMs);
  };
  return { store, batches: () => batches };
}

describe('consumeAll on a real Redis', () => {
  test('limits on one RedisStore go through its consumeAll: all or nothing, one call per decision', async () => {
    const { store, batches } = countingStore('limits-a:');
    const perUser = new Limiter({ policy: fixedWindow({ limit: 2, windowMs: 60_000 }), store, name: 'user' });
    const perIp = new Limiter({ policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 9 }), store, name: 'ip' });
    const request = (user: string): ReturnType<typeof consumeAll> =>
      consumeAll([
        { limiter: perIp, key: 'ip-1' },
        { limiter: perUser, key: user },
      ]);
    assert.equal((await request('u')).allowed, true);
    assert.equal((await request('u')).allowed, true);
    const refused = await request('u');
    assert.equal(refused.allowed, false);
    assert.deepEqual(
      refused.decisions.map((d) => d.allowed),
      [true, false],
    );
    assert.equal(batches(), 3);
    assert.equal((await perIp.peek('ip-1', { cost: 0 })).remaining, 8, 'the refused request charged the ip nothing');
  });

  test('a Redis limit beside a memory limit: decided across stores, a refusal by either charges neither', async () => {
    const { store, batches } = countingStore('limits-b:');
    const perUser = new Limiter({
      policy: fixedWindow({ limit: 1, windowMs: 60_000 }),
      store: store as Store,
      name: 'user',
    });
    const perIp = new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), name: 'ip' });
    assert.equal(
      (
        await consumeAll([
          { limiter: perIp, key: 'ip' },
          { limiter: perUser, key: 'u' },
        ])
      ).allowed,
      true,
    );
    const attempts = await Promise.all(
      Array.from({ length: 20 }, () =>
        consumeAll([
          { limiter: perIp, key: 'ip' },
          { limiter: perUser, key: 'u' },
        ]),
      ),
    );
    assert.equal(attempts.filter((r) => r.allowed).length, 0);
    assert.equal(perIp.peekSync('ip', { cost: 0 }).remaining, 4, 'twenty refusals charged the ip nothing');
    assert.equal(batches(), 0, 'two stores: not the one-store path');
  });
});
