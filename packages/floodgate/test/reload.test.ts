import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  FloodgateError,
  Limiter,
  ManualClock,
  MemoryStore,
  fixedWindow,
  gcra,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
  type MemoryTable,
} from '../src/index.js';

/** Limiters built from a config, as a reload does: fresh policy objects every time. */
function build(
  config: { api: number; login: number; search: number },
  store: MemoryStore,
  clock: ManualClock,
): Limiter[] {
  return [
    new Limiter({ policy: tokenBucket({ capacity: config.api, refillPerSecond: 2 }), store, clock, name: 'api' }),
    new Limiter({ policy: slidingWindowLog({ limit: config.login, windowMs: 60_000 }), store, clock, name: 'login' }),
    new Limiter({ policy: gcra({ rate: config.search, periodMs: 1000, maxBurst: 4 }), store, clock, name: 'search' }),
  ];
}

/** Deterministic traffic: request n hits limiter n % 3 on one of 7 keys, with a cost of 1 or 2. */
function traffic(limiters: readonly Limiter[], clock: ManualClock, from: number, to: number): void {
  for (let n = from; n < to; n++) {
    clock.advance(37);
    limiters[n % 3]!.consumeSync(`key-${(n * 5) % 7}`, { cost: 1 + (n % 2) });
  }
}

const tableOf = (store: MemoryStore, policy: Algorithm): MemoryTable => {
  const table = store.bind(policy);
  store.release(policy);
  return table;
};

describe('reloading policies', () => {
  test('three policies under traffic, one replaced: the other two keep their counts exactly; the replaced one starts fresh', () => {
    const config = { api: 10, login: 5, search: 8 };
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const controlClock = new ManualClock(0);
    const controlStore = new MemoryStore();
    const control = build(config, controlStore, controlClock);
    let live = build(config, store, clock);
    traffic(live, clock, 0, 300);
    traffic(control, controlClock, 0, 300);

    const next = build({ ...config, search: 20 }, store, clock);
    for (const old of live) old.close();
    live = next;
    assert.equal(store.policies, 3, 'the old search table was dropped; api and login kept theirs');

    for (let k = 0; k < 7; k++) {
      for (const i of [0, 1]) {
        const key = `key-${k}`;
        const kept = tableOf(store, live[i]!.policy).stateOf(key);
        assert.ok(kept !== undefined, `${key} is held`);
        assert.deepEqual(
          kept,
          tableOf(controlStore, control[i]!.policy).stateOf(key),
          `${live[i]!.name} ${key} kept, cell for cell`,
        );
      }
      assert.equal(
        live[2]!.peekSync(`key-${k}`, { cost: 0 }).remaining,
        5,
        'the new search policy starts every key fresh',
      );
    }
    traffic(live, clock, 300, 600);
    traffic(control, controlClock, 300, 600);
    for (let k = 0; k < 7; k++) {
      for (const i of [0, 1])
        assert.deepEqual(live[i]!.peekSync(`key-${k}`, { cost: 0 }), control[i]!.peekSync(`key-${k}`, { cost: 0 }));
    }
  });

  test('a table is shared by equal policies and dropped when its last limiter closes; a closed limiter refuses calls', async () => {
    const store = new MemoryStore();
    const a = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 1000 }), store, clock: new ManualClock(0) });
    const b = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 1000 }), store, clock: new ManualClock(0) });
    a.consumeSync('k');
    assert.equal(b.peekSync('k', { cost: 0 }).remaining, 2, 'same policy, same table');
    a.close();
    a.close();
    assert.equal(store.policies, 1);
    assert.equal(b.consumeSync('k').remaining, 1);
    assert.throws(
      () => a.consumeSync('k'),
      (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED',
    );
    await assert.rejects(a.consume('k'), (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED');
    await assert.rejects(a.acquire('k'), (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED');
    await assert.rejects(a.reset('k'), (e) => e instanceof FloodgateError && e.code === 'LIMITER_CLOSED');
    b.close();
    assert.equal(store.policies, 0);
    assert.equal(store.size, 0);
    const c = new Limiter({ policy: fixedWindow({ limit: 3, windowMs: 1000 }), store, clock: new ManualClock(0) });
    assert.equal(c.peekSync('k', { cost: 0 }).remaining, 3, 'a later bind starts from fresh keys');
  });

  test("a released table's memory is collected (no reference is left to it)", async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const store = new MemoryStore();
    let limiter: Limiter | undefined = new Limiter({
      policy: tokenBucket({ capacity: 5, refillPerSecond: 1 }),
      store,
      clock: new ManualClock(0),
    });
    for (let i = 0; i < 1000; i++) limiter.consumeSync(`k${i}`);
    const table = new WeakRef(limiter.table);
    limiter.close();
    limiter = undefined;
    for (let i = 0; i < 5 && table.deref() !== undefined; i++) {
      await nextTurn();
      gc();
    }
    assert.equal(table.deref(), undefined);
  });
});
