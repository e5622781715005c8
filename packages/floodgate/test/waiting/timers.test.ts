import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock, systemTimers, type TimerHandle, type Timers } from '../../src/index.js';
import { Alarm } from '../../src/waiting/alarm.js';

describe('ManualClock as Timers', () => {
  test('due timers fire in time order, each seeing now() at its due time; ties in the order set', () => {
    const clock = new ManualClock(100);
    const seen: string[] = [];
    clock.setTimer(() => seen.push(`c@${clock.now()}`), 30);
    clock.setTimer(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimer(() => seen.push(`b@${clock.now()}`), 10);
    clock.setTimer(() => seen.push(`late@${clock.now()}`), 500);
    assert.equal(clock.advance(50), 150);
    assert.deepEqual(seen, ['a@110', 'b@110', 'c@130']);
    assert.equal(clock.timerCount(), 1);
    assert.equal(clock.nextTimerAtMs(), 600);
  });

  test('a timer set by a callback fires in the same move when it falls due within it', () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    const tick = (): void => {
      seen.push(clock.now());
      if (seen.length < 5) clock.setTimer(tick, 100);
    };
    clock.setTimer(tick, 100);
    clock.set(350);
    assert.deepEqual(seen, [100, 200, 300]);
    clock.set(1000);
    assert.deepEqual(seen, [100, 200, 300, 400, 500]);
  });

  test('clearTimer cancels; clearing twice, or after firing, does nothing', () => {
    const clock = new ManualClock(0);
    let fired = 0;
    const handle = clock.setTimer(() => fired++, 10);
    clock.clearTimer(handle);
    clock.clearTimer(handle);
    assert.equal(clock.timerCount(), 0);
    assert.equal(clock.nextTimerAtMs(), undefined);
    clock.advance(100);
    assert.equal(fired, 0);
    const other = clock.setTimer(() => fired++, 0);
    clock.advance(0);
    clock.clearTimer(other);
    assert.equal(fired, 1);
    clock.clearTimer({} as TimerHandle);
  });

  test('many cleared timers are dropped, not kept until they surface', () => {
    const clock = new ManualClock(0);
    for (let i = 0; i < 10_000; i++) clock.clearTimer(clock.setTimer(() => {}, 1e9 + i));
    assert.equal(clock.timerCount(), 0);
    assert.equal(clock.nextTimerAtMs(), undefined);
  });

  test('moving back fires nothing; a delay of 0 or less fires on the next move; Infinity never', () => {
    const clock = new ManualClock(1000);
    const seen: string[] = [];
    clock.setTimer(() => seen.push('soon'), 100);
    clock.set(0);
    assert.equal(seen.length, 0);
    clock.setTimer(() => seen.push(`now@${clock.now()}`), -5);
    clock.setTimer(() => seen.push('never'), Infinity);
    clock.advance(0);
    assert.deepEqual(seen, ['now@0']);
    clock.set(1100);
    assert.deepEqual(seen, ['now@0', 'soon']);
    clock.set(1e300);
    assert.equal(seen.length, 2);
  });

  test('a throwing callback does not stop the others; the first error comes out once the move is done', () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.setTimer(() => {
      throw new Error('first');
    }, 10);
    clock.setTimer(() => seen.push(clock.now()), 20);
    clock.setTimer(() => {
      throw new Error('second');
    }, 30);
    assert.throws(() => clock.advance(100), /first/);
    assert.deepEqual(seen, [20]);
    assert.equal(clock.now(), 100);
  });

  test('moving the clock from a callback is refused', () => {
    const clock = new ManualClock(0);
    clock.setTimer(() => clock.advance(1), 10);
    assert.throws(() => clock.advance(100), /from a timer callback/);
    assert.equal(clock.now(), 100);
  });

  test('keeps its Clock behaviour: advance and set return the time; non-finite moves throw', () => {
    const clock = new ManualClock();
    assert.equal(clock.now(), 0);
    assert.equal(clock.advance(-5), -5);
    assert.equal(clock.set(2.5), 2.5);
    assert.throws(() => clock.advance(Number.NaN), RangeError);
    assert.throws(() => clock.set(Infinity), RangeError);
  });
});

describe('systemTimers', () => {
  test('fires after the delay, rounded up to whole ms', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let fired = 0;
    systemTimers.setTimer(() => fired++, 9.2);
    t.mock.timers.tick(9);
    assert.equal(fired, 0);
    t.mock.timers.tick(1);
    assert.equal(fired, 1);
  });

  test('a delay past 2^31 - 1 ms is chained in steps, not fired at once; it can be cleared between steps', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const maxMs = 2 ** 31 - 1;
    let fired = 0;
    systemTimers.setTimer(() => fired++, maxMs + 1000);
    const cleared = systemTimers.setTimer(() => fired++, 3 * maxMs);
    t.mock.timers.tick(maxMs);
    assert.equal(fired, 0, 'not at the first step');
    t.mock.timers.tick(1000);
    assert.equal(fired, 1);
    systemTimers.clearTimer(cleared);
    t.mock.timers.tick(3 * maxMs);
    assert.equal(fired, 1);
  });

  test('Infinity never fires; clearing a foreign handle does nothing', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let fired = 0;
    const handle = systemTimers.setTimer(() => fired++, Infinity);
    t.mock.timers.tick(2 ** 32);
    assert.equal(fired, 0);
    systemTimers.clearTimer(handle);
    systemTimers.clearTimer({});
  });

  test('a pending timer keeps the process alive, as a waiter should; a cleared one does not', () => {
    const timeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const handle = systemTimers.setTimer(() => {}, 60_000);
    assert.equal(timeouts(), before + 1);
    systemTimers.clearTimer(handle);
    assert.equal(timeouts(), before);
  });
});

describe('Alarm', () => {
  /** Timers whose timers fire only when `fireAll` is called, whatever their delay. */
  class EagerTimers implements Timers {
    pending = new Set<() => void>();
    setTimer(callback: () => void): TimerHandle {
      const box = { callback };
      this.pending.add(callback);
      return box;
    }
    clearTimer(handle: TimerHandle): void {
      this.pending.delete((handle as { callback: () => void }).callback);
    }
    fireAll(): void {
      const callbacks = [...this.pending];
      this.pending.clear();
      for (const callback of callbacks) callback();
    }
  }

  test('a timer that fires before the clock reaches the time is re-armed for the rest', () => {
    const clock = new ManualClock(0);
    const timers = new EagerTimers();
    let rang = 0;
    const alarm = new Alarm(clock, timers, () => rang++);
    alarm.setAt(100);
    clock.set(60);
    timers.fireAll();
    assert.equal(rang, 0);
    assert.equal(timers.pending.size, 1, 're-armed');
    clock.set(100);
    timers.fireAll();
    assert.equal(rang, 1);
    assert.equal(alarm.armedAtMs, Infinity);
  });

  test('setting the same time keeps the timer; Infinity or NaN disarms', () => {
    const clock = new ManualClock(0);
    const alarm = new Alarm(clock, clock, () => {});
    alarm.setAt(50);
    alarm.setAt(50);
    assert.equal(clock.timerCount(), 1);
    alarm.setAt(80);
    assert.equal(clock.timerCount(), 1);
    assert.equal(clock.nextTimerAtMs(), 80);
    alarm.setAt(Number.NaN);
    assert.equal(clock.timerCount(), 0);
  });
});
