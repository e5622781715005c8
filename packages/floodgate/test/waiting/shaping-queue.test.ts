import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FloodgateError, ManualClock, ShapingQueue, type TimerHandle, type Timers } from '../../src/index.js';
import { flush, runAll, runUntil, track } from './support.js';

/** A queue on a manual clock whose tasks record when they start, and finish at once. */
function setup(options: { intervalMs: number; capacity: number; concurrency?: number }) {
  const clock = new ManualClock(0);
  const queue = new ShapingQueue({ ...options, clock });
  const starts: number[] = [];
  const task = (label: number) => (): number => {
    starts.push(clock.now());
    return label;
  };
  return { clock, queue, starts, task };
}

describe('ShapingQueue: the leaky bucket as a queue', () => {
  test('tasks start one per intervalMs, in order, whatever pace they came at', async () => {
    const { clock, queue, starts, task } = setup({ intervalMs: 100, capacity: 10 });
    const results = [0, 1, 2, 3, 4].map((i) => track(clock, queue.submit(task(i))));
    assert.deepEqual(starts, [0], 'a task that can start does so before submit returns');
    await runAll(clock);
    assert.deepEqual(starts, [0, 100, 200, 300, 400]);
    assert.deepEqual(
      results.map((r) => r.value),
      [0, 1, 2, 3, 4],
    );
  });

  test('what would overflow the bucket is refused at once with QUEUE_FULL', async () => {
    const { clock, queue, task } = setup({ intervalMs: 100, capacity: 2 });
    const outcomes = [0, 1, 2, 3].map((i) => track(clock, queue.submit(task(i))));
    await flush();
    assert.equal(queue.waiting, 2);
    assert.deepEqual(outcomes[3]!.outcome, { kind: 'failed', code: 'QUEUE_FULL', atMs: 0 });
    await runUntil(clock, 100);
    assert.equal(queue.waiting, 1, 'a place frees up as a task starts');
    assert.equal(track(clock, queue.submit(task(4))).outcome.kind, 'pending');
  });

  test('capacity 0: a task starts now or is refused', async () => {
    const { clock, queue, starts, task } = setup({ intervalMs: 100, capacity: 0 });
    const first = track(clock, queue.submit(task(0)));
    const second = track(clock, queue.submit(task(1)));
    await runUntil(clock, 100);
    const third = track(clock, queue.submit(task(2)));
    await flush();
    assert.deepEqual([first.outcome.kind, second.outcome.kind, third.outcome.kind], ['admitted', 'failed', 'admitted']);
    assert.deepEqual(starts, [0, 100]);
  });

  test('concurrency holds tasks back until one finishes; the schedule then restarts from now', async () => {
    const clock = new ManualClock(0);
    const queue = new ShapingQueue({ intervalMs: 10, capacity: 10, concurrency: 2, clock });
    const starts: number[] = [];
    const slowTask = (): Promise<void> => {
      starts.push(clock.now());
      return new Promise((resolve) => clock.setTimer(resolve, 100));
    };
    for (let i = 0; i < 5; i++) void queue.submit(slowTask);
    await runUntil(clock, 50);
    assert.deepEqual([starts, queue.running, queue.waiting], [[0, 10], 2, 3]);
    await runAll(clock);
    assert.deepEqual(starts, [0, 10, 100, 110, 200]);
  });

  test('the promise settles as the task does: value, rejection, synchronous throw', async () => {
    const { queue } = setup({ intervalMs: 1, capacity: 10 });
    assert.equal(await queue.submit(() => 'sync value'), 'sync value');
    const { queue: q2, clock } = setup({ intervalMs: 1, capacity: 10 });
    const failure = new Error('task failed');
    const rejected = track(
      clock,
      q2.submit(() => Promise.reject(failure)),
    );
    const thrown = track(
      clock,
      q2.submit(() => {
        throw failure;
      }),
    );
    const odd = track(
      clock,
      q2.submit(() => Promise.reject('not an Error')),
    );
    await runAll(clock);
    assert.equal(rejected.error, failure);
    assert.equal(thrown.error, failure);
    assert.equal(odd.error, 'not an Error', "a task's own rejection passes through as it is");
    assert.equal(q2.running, 0);
  });

  test('an aborted task never starts; the schedule goes on for the rest', async () => {
    const { clock, queue, starts, task } = setup({ intervalMs: 100, capacity: 10 });
    const controller = new AbortController();
    void queue.submit(task(0));
    const leaving = track(clock, queue.submit(task(1), { signal: controller.signal }));
    void queue.submit(task(2));
    controller.abort(new Error('not needed'));
    await runAll(clock);
    assert.deepEqual(leaving.outcome, { kind: 'failed', code: 'ABORTED', atMs: 0 });
    assert.equal((leaving.error as FloodgateError).cause instanceof Error, true);
    assert.deepEqual(starts, [0, 100]);
    const already = track(clock, queue.submit(task(3), { signal: AbortSignal.abort() }));
    await flush();
    assert.equal(already.outcome.kind, 'failed');
  });

  test('after idling it starts again at once, without a burst to catch up', async () => {
    const { clock, queue, starts, task } = setup({ intervalMs: 100, capacity: 10 });
    void queue.submit(task(0));
    await runUntil(clock, 5000);
    for (let i = 1; i <= 3; i++) void queue.submit(task(i));
    await runAll(clock);
    assert.deepEqual(starts, [0, 5000, 5100, 5200]);
  });

  test('a start its timer delayed by less than an interval does not delay the next', async () => {
    const clock = new ManualClock(0);
    const timers = new LateTimers();
    const queue = new ShapingQueue({ intervalMs: 100, capacity: 10, clock, timers });
    const starts: number[] = [];
    for (let i = 0; i < 4; i++) void queue.submit(() => starts.push(clock.now()));
    clock.set(130); // the timer for 100 fires 30 ms late
    timers.fire();
    clock.set(200);
    timers.fire();
    clock.set(450); // 150 ms late: a whole interval behind, so the schedule restarts from now
    timers.fire();
    assert.deepEqual(starts, [0, 130, 200, 450]);
  });

  test('fractional intervals keep their rate: 3 a second for 10 s starts 30 tasks after the first', async () => {
    const { clock, queue, starts, task } = setup({ intervalMs: 1000 / 3, capacity: 1000 });
    for (let i = 0; i < 100; i++) void queue.submit(task(i));
    await runUntil(clock, 10_000);
    assert.equal(starts.length, 31);
    assert.equal(clock.timerCount(), 1, 'one timer for the whole queue');
  });

  test('a clock set back moves the schedule with it, so nothing stalls', async () => {
    const clock = new ManualClock(10_000);
    const queue = new ShapingQueue({ intervalMs: 100, capacity: 10, clock });
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) void queue.submit(() => starts.push(clock.now()));
    clock.set(0);
    await runUntil(clock, 200);
    assert.deepEqual(starts, [10_000, 100, 200]);
  });

  test('a task may submit another; it waits its turn', async () => {
    const { clock, queue, starts } = setup({ intervalMs: 100, capacity: 10 });
    const inner = new Array<Promise<number>>();
    void queue.submit(() => {
      starts.push(clock.now());
      inner.push(queue.submit(() => clock.now()));
    });
    await runAll(clock);
    assert.equal(await inner[0], 100);
  });

  test('options are checked', () => {
    const clock = new ManualClock(0);
    assert.throws(() => new ShapingQueue({ intervalMs: 0, capacity: 1, clock }), {
      code: 'INVALID_OPTION',
      option: 'ShapingQueue.intervalMs',
    });
    assert.throws(() => new ShapingQueue({ intervalMs: 1, capacity: -1, clock }), { option: 'ShapingQueue.capacity' });
    assert.throws(() => new ShapingQueue({ intervalMs: 1 } as never), { option: 'ShapingQueue.capacity' });
    assert.throws(() => new ShapingQueue({ intervalMs: 1, capacity: 1, concurrency: 0 }), {
      option: 'ShapingQueue.concurrency',
    });
  });

  test('submit never throws: a task that is not a function rejects', async () => {
    const { queue } = setup({ intervalMs: 1, capacity: 1 });
    await assert.rejects(queue.submit(42 as never), { code: 'INVALID_OPTION' });
  });
});

/** Timers fired by hand, late or early as the test pleases. */
class LateTimers implements Timers {
  private callbacks = new Map<object, () => void>();
  setTimer(callback: () => void): TimerHandle {
    const handle = {};
    this.callbacks.set(handle, callback);
    return handle;
  }
  clearTimer(handle: TimerHandle): void {
    this.callbacks.delete(handle);
  }
  fire(): void {
    const due = [...this.callbacks.values()];
    this.callbacks.clear();
    for (const callback of due) callback();
  }
}
