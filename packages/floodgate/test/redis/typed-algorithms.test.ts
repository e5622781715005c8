import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FloodgateError,
  ManualClock,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../src/index.js';
import { windowMsOf } from '../../src/http/headers.js';
import { scaledPolicy } from '../../src/stores/redis/failure-policy.js';
import { RedisStore, type RedisAdapter } from '../../src/stores/redis/index.js';
import { luaPolicyOf } from '../../src/stores/redis/scripts/index.js';

// Each algorithm carries what the Redis store and the HTTP headers need (its kind, its quota
// window, its scaled share), so nothing outside the core reads its name.

const cases: Array<{
  policy: Algorithm;
  lua: [string, string, number[]];
  windowMs: number;
  half: Record<string, number>;
}> = [
  {
    policy: tokenBucket({ capacity: 10, refillPerSecond: 4 }),
    lua: ['token-bucket', 'token-bucket', [10, 4]],
    windowMs: 2500,
    half: { capacity: 5, refillPerSecond: 2 },
  },
  {
    policy: leakyBucket({ capacity: 10, leakPerSecond: 4 }),
    lua: ['token-bucket', 'leaky-bucket', [10, 4]],
    windowMs: 2500,
    half: { capacity: 5, leakPerSecond: 2 },
  },
  {
    policy: fixedWindow({ limit: 5, windowMs: 1000 }),
    lua: ['fixed-window', 'fixed-window', [5, 1000]],
    windowMs: 1000,
    half: { limit: 2.5, windowMs: 1000 },
  },
  {
    policy: slidingWindowLog({ limit: 3, windowMs: 1000 }),
    lua: ['sliding-window-log', 'sliding-window-log', [3, 1000]],
    windowMs: 1000,
    half: { limit: 1, windowMs: 1000 },
  },
  {
    policy: slidingWindowCounter({ limit: 8, windowMs: 60_000 }),
    lua: ['weighted-window', 'weighted-window', [8, 60_000]],
    windowMs: 60_000,
    half: { limit: 4, windowMs: 60_000 },
  },
  {
    policy: slidingWindowCounter({ limit: 8, windowMs: 60_000, subWindows: 6 }),
    lua: ['sub-window-counter', 'sub-window-counter', [8, 60_000, 6]],
    windowMs: 60_000,
    half: { limit: 4, windowMs: 60_000, subWindows: 6 },
  },
  {
    policy: gcra({ rate: 10, periodMs: 1000, maxBurst: 9 }),
    lua: ['gcra', 'gcra', [10, 1000, 9]],
    windowMs: 1000,
    half: { rate: 5, periodMs: 1000, maxBurst: 4 },
  },
];

/** renamed returns `policy` under another name: same prototype, same state, a name nobody knows. */
function renamed(policy: Algorithm): Algorithm {
  return Object.assign(Object.create(Object.getPrototypeOf(policy) as object) as Algorithm, policy, {
    name: 'renamed',
  });
}

describe('what each algorithm carries', () => {
  for (const { policy, lua, windowMs, half } of cases) {
    test(`${policy.name} ${JSON.stringify(policy.params)}`, () => {
      for (const p of [policy, renamed(policy)]) {
        const run = luaPolicyOf(p);
        assert.deepEqual([run.module, run.registered, run.params], lua, 'the script comes from the kind, not the name');
        assert.equal(windowMsOf(p), windowMs);
        const scaled = scaledPolicy(p, 0.5);
        assert.deepEqual(scaled.params, half);
        assert.equal(scaled.kind, policy.kind, 'a scaled policy keeps its rule');
      }
    });
  }

  test('scaled keeps whole-number limits at 1 at least, and checks its share', () => {
    assert.equal(slidingWindowLog({ limit: 3, windowMs: 1000 }).scaled!(0.1).limit, 1);
    assert.equal(gcra({ rate: 1, periodMs: 1000, maxBurst: 0 }).scaled!(0.1).limit, 1);
    for (const share of [0, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => tokenBucket({ capacity: 2, refillPerSecond: 1 }).scaled!(share),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION',
      );
    }
  });

  test('an algorithm without scaled has no local fallback, said at bind time', () => {
    const plain = renamed(fixedWindow({ limit: 2, windowMs: 1000 }));
    Object.defineProperty(plain, 'scaled', { value: undefined }); // hides the prototype's scaled
    const adapter: RedisAdapter = {
      cluster: false,
      evalsha: () => Promise.reject(new Error('no')),
      eval: () => Promise.reject(new Error('no')),
    };
    assert.throws(
      () => new RedisStore({ adapter, onError: { fallback: 'local', share: 0.5 } }).bind(plain),
      /no local fallback for the algorithm "renamed": it has no scaled\(share\)/,
    );
  });

  test('a renamed policy is decided by Redis and by the local fallback exactly as the original', async () => {
    const sent: unknown[][] = [];
    let fail = false;
    const answer = (_script: string, _keys: readonly string[], args: readonly string[]): Promise<unknown> => {
      sent.push([...args]);
      return fail ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(['1', '4', '0', '250']);
    };
    const clock = new ManualClock();
    const store = new RedisStore({
      adapter: { cluster: false, evalsha: answer, eval: answer },
      onError: { fallback: 'local', share: 0.5 },
      maxBatchSize: 1,
      clock,
      timers: clock,
    });
    const original = tokenBucket({ capacity: 5, refillPerSecond: 4 });
    for (const p of [original, renamed(original)]) await store.bind(p).consume('k', 1, Number.NaN);
    assert.deepEqual(sent[0], sent[1]);
    fail = true;
    const local = [];
    for (const p of [original, renamed(original)]) {
      const table = store.bind(p);
      for (let i = 0; i < 3; i++) local.push((await table.consume(`k-${p.name}`, 1, Number.NaN)).allowed);
    }
    assert.deepEqual(local, [true, true, false, true, true, false], 'half of 5 tokens, either way');
  });
});
