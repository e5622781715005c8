import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { bruteForceGuard, type BruteForceRule } from '../../src/http/index.js';
import { FloodgateError, ManualClock } from '../../src/index.js';
import { RedisStore, ioredisAdapter } from '../../src/redis.js';
import { startRedisServer, type RedisServers } from '../support/redis-server.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

interface Attempt {
  ip: string;
  user: string;
}
const MIN = 60_000;
const HOUR = 60 * MIN;

const loginRules: BruteForceRule<Attempt>[] = [
  { name: 'ip', key: (a) => a.ip, maxFailures: 20, windowMs: 24 * HOUR, blockMs: 24 * HOUR },
  {
    name: 'user-ip',
    key: (a) => `${a.user}@${a.ip}`,
    maxFailures: 3,
    windowMs: HOUR,
    blockMs: [MIN, 10 * MIN, HOUR],
    resetOnSuccess: true,
  },
];

describe('bruteForceGuard on the manual clock', () => {
  const alice = { ip: '192.0.2.1', user: 'alice' };

  it('blocks a user at an IP on the 3rd consecutive failure, for a minute, and lets the block end', async () => {
    const clock = new ManualClock(0);
    const guard = bruteForceGuard({ rules: loginRules, clock });
    assert.equal((await guard.failed(alice)).allowed, true);
    assert.equal((await guard.failed(alice)).allowed, true);
    const third = await guard.failed(alice);
    assert.deepEqual(third, { allowed: false, retryAfterMs: MIN, blockedBy: ['user-ip'] });
    // Another user at the same IP, and alice from elsewhere, are not blocked.
    assert.equal((await guard.check({ ip: alice.ip, user: 'bob' })).allowed, true);
    assert.equal((await guard.check({ ip: '198.51.100.7', user: 'alice' })).allowed, true);
    clock.advance(MIN - 1);
    assert.equal((await guard.check(alice)).retryAfterMs, 1);
    clock.advance(1);
    assert.equal((await guard.check(alice)).allowed, true);
  });

  it('escalates: the next blocks last 10 minutes, then an hour, then an hour again', async () => {
    const clock = new ManualClock(0);
    const guard = bruteForceGuard({ rules: loginRules, clock });
    const blockLengths: number[] = [];
    for (let round = 0; round < 4; round++) {
      let answer = await guard.failed(alice);
      while (answer.allowed) answer = await guard.failed(alice);
      blockLengths.push(answer.retryAfterMs);
      clock.advance(answer.retryAfterMs);
      assert.equal((await guard.check(alice)).allowed, true);
    }
    assert.deepEqual(blockLengths, [MIN, 10 * MIN, HOUR, HOUR]);
  });

  it('counts consecutive failures only: a success in between starts over', async () => {
    const guard = bruteForceGuard({ rules: loginRules, clock: new ManualClock(0) });
    // 18 failures from the IP: under the per-IP rule's 20.
    for (let i = 0; i < 9; i++) {
      await guard.failed(alice);
      assert.equal((await guard.failed(alice)).allowed, true);
      await guard.succeeded(alice);
    }
    assert.equal((await guard.check(alice)).allowed, true);
    await guard.failed(alice);
    assert.deepEqual((await guard.failed(alice)).blockedBy, ['ip'], 'the 20th from the IP, only the 2nd in a row');
  });

  it('the slow per-IP rule blocks an IP trying many users, for a day, successes or not', async () => {
    const guard = bruteForceGuard({ rules: loginRules, clock: new ManualClock(0) });
    let last = await guard.failed({ ip: '203.0.113.5', user: 'u0' });
    for (let i = 1; i < 20; i++) last = await guard.failed({ ip: '203.0.113.5', user: `u${i}` });
    assert.deepEqual(last, { allowed: false, retryAfterMs: 24 * HOUR, blockedBy: ['ip'] });
    await guard.succeeded({ ip: '203.0.113.5', user: 'u0' });
    assert.equal((await guard.check({ ip: '203.0.113.5', user: 'new' })).allowed, false);
  });

  it('forgets failures over the window and past blocks after forgetBlocksMs', async () => {
    const clock = new ManualClock(0);
    const guard = bruteForceGuard<Attempt>({
      rules: [
        {
          name: 'u',
          key: (a) => a.user,
          maxFailures: 2,
          windowMs: MIN,
          blockMs: [MIN, HOUR],
          forgetBlocksMs: 2 * HOUR,
        },
      ],
      clock,
    });
    await guard.failed(alice);
    clock.advance(MIN);
    assert.equal((await guard.failed(alice)).allowed, true, 'the first failure was forgotten');
    assert.equal((await guard.failed(alice)).retryAfterMs, MIN);
    clock.advance(4 * HOUR);
    await guard.failed(alice);
    assert.equal((await guard.failed(alice)).retryAfterMs, MIN, 'the earlier block was forgotten: no escalation');
  });

  it('refuses bad rules with INVALID_OPTION naming the field', () => {
    const bad: [unknown, string][] = [
      [[], 'rules'],
      [[{ ...loginRules[0], maxFailures: 0 }], 'rules[0].maxFailures'],
      [[{ ...loginRules[0], blockMs: [] }], 'rules[0].blockMs'],
      [[{ ...loginRules[0], windowMs: -1 }], 'rules[0].windowMs'],
      [[loginRules[0], loginRules[0]], 'rules[1].name'],
      [[{ ...loginRules[0], key: 'ip' }], 'rules[0].key'],
    ];
    for (const [rules, option] of bad) {
      assert.throws(
        () => bruteForceGuard({ rules: rules as BruteForceRule<Attempt>[] }),
        (err: unknown) => err instanceof FloodgateError && err.code === 'INVALID_OPTION' && err.option === option,
        option,
      );
    }
  });

  it('a key function returning a non-string is a typed error', async () => {
    const guard = bruteForceGuard<Attempt>({
      rules: [{ name: 'x', key: () => 42 as unknown as string, maxFailures: 1, windowMs: MIN, blockMs: MIN }],
    });
    await assert.rejects(guard.check(alice), (err: unknown) => err instanceof FloodgateError && err.option === 'x.key');
  });
});

describe('bruteForceGuard on a real Redis', () => {
  let redis: RedisServers;
  const clients: Redis[] = [];
  before(async () => {
    redis = await startRedisServer();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await redis.stop();
  });
  const storeOf = (): RedisStore => {
    const client = new Redis({ port: redis.ports[0]!, host: '127.0.0.1', lazyConnect: false });
    clients.push(client);
    return new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(client) });
  };

  it('two processes (two clients) share the count and the block; a success resets the count everywhere', async () => {
    const a = bruteForceGuard({ rules: loginRules, store: storeOf() });
    const b = bruteForceGuard({ rules: loginRules, store: storeOf() });
    const carol = { ip: '192.0.2.44', user: 'carol' };
    await a.failed(carol);
    await b.failed(carol);
    await b.succeeded(carol);
    await a.failed(carol);
    assert.equal((await b.failed(carol)).allowed, true, 'the success cleared the count in Redis');
    const blocked = await a.failed(carol);
    assert.equal(blocked.allowed, false);
    assert.deepEqual(blocked.blockedBy, ['user-ip']);
    assert.ok(blocked.retryAfterMs > MIN - 5_000 && blocked.retryAfterMs <= MIN, String(blocked.retryAfterMs));
    assert.equal((await b.check(carol)).allowed, false, 'the other process sees the block');
    assert.equal((await b.check({ ...carol, user: 'dave' })).allowed, true);
  });
});
