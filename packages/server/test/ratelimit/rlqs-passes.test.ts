import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { Passes } from '../../src/ratelimit/quota/passes.js';

/** passesOn returns passes on a manual clock (100 ms delay) whose runs are held until `finish` is called, and the runs made. */
function passesOn(serves = (_key: string) => true) {
  const clock = new ManualClock(0);
  const runs: Array<{ key: string; atMs: number }> = [];
  const finishes: Array<() => void> = [];
  const passes = new Passes({
    timers: clock,
    delayMs: 100,
    serves,
    failed: () => undefined,
    run: (key) => {
      runs.push({ key, atMs: clock.now() });
      return new Promise<void>((resolve) => finishes.push(resolve));
    },
  });
  const finish = async (): Promise<void> => {
    finishes.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, runs, passes, finish };
}

describe('redistribution passes on a manual clock', () => {
  it('run one pass per bucket 100 ms after the first ask, however many asks fall within it', () => {
    const { clock, runs, passes } = passesOn();
    passes.ask('a');
    clock.advance(50);
    passes.ask('a');
    passes.ask('b');
    clock.advance(49);
    assert.deepEqual(runs, []);
    clock.advance(1);
    assert.deepEqual(runs, [{ key: 'a', atMs: 100 }]);
    clock.advance(50);
    assert.deepEqual(runs, [
      { key: 'a', atMs: 100 },
      { key: 'b', atMs: 150 },
    ]);
  });

  it('run one more pass after a pass out when asked meanwhile, never two at once', async () => {
    const { clock, runs, passes, finish } = passesOn();
    passes.ask('a');
    clock.advance(100);
    passes.ask('a');
    passes.ask('a');
    clock.advance(500);
    assert.equal(runs.length, 1, 'a pass is out: the asks wait for it');
    await finish();
    clock.advance(100);
    assert.deepEqual(runs, [
      { key: 'a', atMs: 100 },
      { key: 'a', atMs: 700 },
    ]);
    await finish();
    clock.advance(1000);
    assert.equal(runs.length, 2);
  });

  it('run no pass over a bucket this replica serves no client of, nor once closed', () => {
    const { clock, runs, passes } = passesOn((key) => key !== 'gone');
    passes.ask('gone');
    passes.ask('a');
    passes.close();
    clock.advance(1000);
    assert.deepEqual(runs, []);
  });

  it('count the clients granted nothing per bucket, down to none', () => {
    const { passes } = passesOn();
    passes.starve('a', 1);
    passes.starve('a', 1);
    passes.starve('a', -1);
    assert.equal(passes.starves('a'), true);
    passes.starve('a', -1);
    assert.equal(passes.starves('a'), false);
    assert.equal(passes.starves('b'), false);
  });
});
