import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  fixedWindow,
  gcra,
  tokenBucket,
  type Algorithm,
  type FloodgateErrorCode,
} from '../../src/index.js';
import { RedisStore, ioredisAdapter, type RedisAdapter } from '../../src/stores/redis/index.js';
import { useRedis } from './setup.js';

// Redis decides every request in these tests, however loaded the machine: a fixed, generous timeout
// (the adaptive default would cut a call off at 3x the recent p99, and a fallback would decide it).
const DECIDES = 5000;

const get = useRedis();
const policy = tokenBucket({ capacity: 3, refillPerSecond: 1 });

/** fake returns an adapter whose every call answers `answer()`. */
function fake(answer: () => Promise<unknown>): RedisAdapter {
  return { cluster: false, evalsha: answer, eval: answer };
}

function rejectsWith(code: FloodgateErrorCode, pattern?: RegExp): (e: unknown) => boolean {
  return (e: unknown) => {
    assert.ok(e instanceof FloodgateError, `expected a FloodgateError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (pattern !== undefined) assert.match(e.message, pattern);
    return true;
  };
}

describe('replies that break the promise are typed errors', () => {
  const replies: Array<[string, unknown]> = [
    ['nothing', null],
    ['a number', 7],
    ['too few fields', ['1', '2', '0']],
    ['a bad flag', ['yes', '2', '0', '10']],
    ['a fraction where whole ms were promised', ['1', '2', '0', '10.5']],
    ['a negative remaining', ['0', '-1', '5', '10']],
  ];
  for (const [name, reply] of replies) {
    test(name, async () => {
      const table = new RedisStore({ timeoutMs: DECIDES, adapter: fake(async () => reply) }).bind(policy);
      await assert.rejects(
        table.consume('a', 1, 0),
        rejectsWith('STORE_REPLY', /token-bucket script \(consume\) answered/),
      );
    });
  }

  test('refund, reset, reserve and consumeAll check their replies too', async () => {
    const store = new RedisStore({ timeoutMs: DECIDES, adapter: fake(async () => 'OK') });
    await assert.rejects(store.bind(policy).refund('a', 1, 0), rejectsWith('STORE_REPLY', /the integer 1/));
    await assert.rejects(store.bind(policy).reset('a'), rejectsWith('STORE_REPLY'));
    await assert.rejects(store.bind(policy).reserve!('a', 1, 0, 10), rejectsWith('STORE_REPLY'));
    await assert.rejects(store.consumeAll([{ policy, key: 'a' }]), rejectsWith('STORE_REPLY', /the batch script/));
  });
});

describe('batch replies that break the promise are typed errors', () => {
  /** Two decisions of one tick (one batch script), answered `reply`. */
  async function batchOf(reply: string | unknown[]): Promise<Array<PromiseSettledResult<unknown>>> {
    const answer = async (): Promise<unknown> => reply;
    const store = new RedisStore({ timeoutMs: DECIDES, adapter: fake(answer), prefix: 'p:', onError: 'throw' });
    const table = store.bind(policy);
    return Promise.allSettled([table.consume('a', 1, 0), table.consume('b', 1, 0)]);
  }

  const whole: Array<[string, string | unknown[]]> = [
    ['fields as an array (one reply per field)', [1, 2, 0, 10, 1, 2, 0, 10]],
    ['a field short', '1,2,0,10,1,2,0,'],
    ['a field too many', '1,2,0,10,1,2,0,10,5,'],
    ['the last field not ended by the separator', '1,2,0,10,1,2,0,10'],
    ['nothing', ''],
  ];
  for (const [name, reply] of whole) {
    test(`${name}: every decision of the batch rejects`, async () => {
      for (const result of await batchOf(reply)) {
        assert.equal(result.status, 'rejected');
        rejectsWith(
          'STORE_REPLY',
          /the batch script answered .* where a string of 4 fields per decision for 2/,
        )((result as PromiseRejectedResult).reason);
      }
    });
  }

  const one: Array<[string, string]> = [
    ['a bad flag', 'yes,2,0,10,'],
    ['a fraction where whole ms were promised', '1,2,0,10.5,'],
    ['a negative remaining', '0,-1,5,10,'],
    ['a leading zero', '1,02,0,10,'],
    ['an empty field', '1,,0,10,'],
    ['Infinity where a count was promised', '1,Infinity,0,10,'],
  ];
  for (const [name, fields] of one) {
    test(`${name}: that decision alone rejects, naming its key and fields`, async () => {
      const [first, second] = await batchOf(`${fields}1,2,0,Infinity,`);
      assert.equal(first!.status, 'rejected');
      const reason = (first as PromiseRejectedResult).reason as Error;
      rejectsWith('STORE_REPLY', /the batch script \(consume on p:token-bucket:\S+:{a}\) answered \[/)(reason);
      assert.ok(reason.message.includes(JSON.stringify(fields.slice(0, -1).split(','))), reason.message);
      assert.equal(second!.status, 'fulfilled');
      assert.equal((second as PromiseFulfilledResult<{ resetMs: number }>).value.resetMs, Infinity);
    });
  }

  test("a decision's script error keeps its message whole, separators and escapes included", async () => {
    const [first, second] = await batchOf('E,state of p:x%2Cy%25 holds 3 bytes%252C,,,1,2,0,10,');
    rejectsWith(
      'STORE_ERROR',
      /the batch script failed for p:token-bucket:\S+:{a}: state of p:x,y% holds 3 bytes%2C$/,
    )((first as PromiseRejectedResult).reason);
    assert.equal(second!.status, 'fulfilled');
  });
});

describe('failures reject with Errors, never hang', () => {
  test('a client error becomes STORE_ERROR, with the cause kept', async () => {
    const cause = new Error('ECONNREFUSED 127.0.0.1:1');
    const table = new RedisStore({
      timeoutMs: DECIDES,
      adapter: fake(() => Promise.reject(cause)),
      onError: 'throw',
    }).bind(policy);
    await assert.rejects(
      table.consume('a', 1, 0),
      (e: unknown) => rejectsWith('STORE_ERROR', /ECONNREFUSED/)(e) && (e as Error).cause === cause,
    );
  });

  test('a rejection with a non-Error still rejects with a FloodgateError', async () => {
    const table = new RedisStore({
      timeoutMs: DECIDES,
      adapter: fake(() => Promise.reject('boom' as unknown as Error)),
      onError: 'throw',
    }).bind(policy);
    await assert.rejects(table.peek('a', 1, 0), rejectsWith('STORE_ERROR', /boom/));
  });

  test('no answer within timeoutMs is STORE_TIMEOUT, and a thousand waiting calls share one timer', async () => {
    const clock = new ManualClock();
    const table = new RedisStore({
      adapter: fake(() => new Promise(() => {})),
      timeoutMs: 50,
      onError: 'throw',
      clock,
      timers: clock,
    }).bind(policy);
    let settled = 0;
    const calls = Array.from({ length: 1000 }, (_, i) => table.consume(`k${i}`, 1, 0).finally(() => settled++));
    await new Promise((resolve) => setImmediate(resolve)); // the batches are sent
    assert.equal(clock.timerCount(), 1, 'one timer for every call in flight');
    clock.advance(49);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, 0, 'nothing settles before the deadline');
    clock.advance(1);
    const results = await Promise.allSettled(calls);
    assert.ok(results.every((r) => r.status === 'rejected' && rejectsWith('STORE_TIMEOUT', /50 ms/)(r.reason)));
    assert.equal(clock.timerCount(), 0, 'no timer once nothing is in flight');
  });

  test('a stopped server is a STORE_TIMEOUT or STORE_ERROR, not a hang', async () => {
    const { Redis } = await import('ioredis');
    const client = new Redis({
      port: 1,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    const table = new RedisStore({ adapter: ioredisAdapter(client), timeoutMs: 200, onError: 'throw' }).bind(policy);
    await assert.rejects(
      table.consume('a', 1, 0),
      (e: unknown) => e instanceof FloodgateError && (e.code === 'STORE_ERROR' || e.code === 'STORE_TIMEOUT'),
    );
    client.disconnect();
  });

  test("a state that is not the policy's layout is a STORE_ERROR naming the key", async () => {
    const table = new RedisStore({
      timeoutMs: DECIDES,
      adapter: ioredisAdapter(get().client),
      prefix: 'corrupt:',
      onError: 'throw',
    }).bind(policy);
    await get().client.set(table.entryOf('a').redisKey, 'not doubles');
    await assert.rejects(
      table.consume('a', 1, 0),
      rejectsWith('STORE_ERROR', /corrupt:token-bucket:.*holds 11 bytes where 16 were expected/),
    );
  });
});

describe('input is checked before anything is sent', () => {
  const never = fake(() => Promise.reject(new Error('nothing should be sent')));

  test("costs and keys reject with the memory store's codes", async () => {
    const table = new RedisStore({ timeoutMs: DECIDES, adapter: never, maxKeyLength: 8 }).bind(policy);
    await assert.rejects(table.consume('a', 4, 0), rejectsWith('COST_EXCEEDS_LIMIT'));
    await assert.rejects(table.consume('a', -1, 0), rejectsWith('INVALID_COST'));
    await assert.rejects(table.refund('a', Number.NaN, 0), rejectsWith('INVALID_COST'));
    await assert.rejects(table.consume('123456789', 1, 0), rejectsWith('INVALID_KEY', /maxKeyLength/));
    await assert.rejects(table.consume(42 as unknown as string, 1, 0), rejectsWith('INVALID_KEY'));
  });

  test('a key that is not a non-empty string is INVALID_KEY on every method and in consumeAll, before any I/O', async () => {
    const store = new RedisStore({ timeoutMs: DECIDES, adapter: never, onError: 'fail-open' });
    const table = store.bind(policy);
    for (const key of ['', undefined, null, 7, {}, ['a']] as unknown as string[]) {
      const named = rejectsWith('INVALID_KEY', /key must be a non-empty string/);
      await assert.rejects(table.consume(key, 1, 0), named);
      await assert.rejects(table.peek(key, 1, 0), named);
      await assert.rejects(table.refund(key, 1, 0), named);
      await assert.rejects(table.reset(key), named);
      await assert.rejects(table.reserve!(key, 1, 0, 10), named);
      await assert.rejects(
        store.consumeAll([
          { policy, key: 'fine' },
          { policy, key },
        ]),
        named,
      );
    }
  });

  test('options', () => {
    const bad: Array<[unknown, RegExp]> = [
      [undefined, /RedisStore must be an options object/],
      [{}, /RedisStore.adapter must be a RedisAdapter/],
      [{ adapter: {} }, /RedisStore.adapter/],
      [{ adapter: never, prefix: 'a{b' }, /RedisStore.prefix/],
      [{ adapter: never, timeoutMs: 0 }, /RedisStore.timeoutMs/],
      [{ adapter: never, unsafeTestTime: 'yes' }, /RedisStore.unsafeTestTime/],
      [{ adapter: never, clock: { now: 0 } }, /RedisStore.clock must have a now\(\) method/],
      [{ adapter: never, timers: {} }, /RedisStore.timers must have setTimer and clearTimer/],
      [{ adapter: never, observer: 'metrics' }, /RedisStore.observer must be an object/],
    ];
    for (const [options, message] of bad) {
      assert.throws(
        () => new RedisStore(options as never),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && message.test(e.message),
      );
    }
    const { kind: _kind, ...withoutKind } = fixedWindow({ limit: 1, windowMs: 1 });
    const foreign = { ...withoutKind, name: 'home-made' } as Algorithm;
    assert.throws(
      () => new RedisStore({ timeoutMs: DECIDES, adapter: never }).bind(foreign),
      /cannot run the algorithm "home-made": the Redis store has no script for its kind/,
    );
    const unknownKind = { ...fixedWindow({ limit: 1, windowMs: 1 }), kind: Symbol('home-made') } as Algorithm;
    assert.throws(
      () => new RedisStore({ timeoutMs: DECIDES, adapter: never }).bind(unknownKind),
      /no script for its kind/,
    );
  });

  test('a Limiter over the store answers by promise; the ...Sync methods say why not', async () => {
    const store = new RedisStore({ timeoutMs: DECIDES, adapter: ioredisAdapter(get().client), prefix: 'limiter:' });
    const limiter = new Limiter({ policy: gcra({ rate: 5, periodMs: 1000, maxBurst: 1 }), store });
    assert.equal((await limiter.consume('u')).remaining, 1);
    assert.equal((await limiter.consume('u', { cost: 2 })).allowed, false);
    assert.throws(
      () => limiter.consumeSync('u'),
      (e: unknown) => e instanceof FloodgateError && e.code === 'STORE_NOT_SYNC',
    );
  });
});
