import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import {
  ADAPTIVE_TIMEOUT_DEFAULTS,
  DeadlineQueue,
  FloodgateError,
  ManualClock,
  StoreTimeout,
  monotonicClock,
  systemTimers,
  watch,
} from '../../src/index.js';

describe('StoreTimeout: a floor, a multiple of the recent p99, a cap', () => {
  test('the default is adaptive: the cap before any answer, then 3x the p99 between 25 and 250 ms', () => {
    const timeout = StoreTimeout.of(undefined, 'T.timeoutMs');
    assert.deepEqual(ADAPTIVE_TIMEOUT_DEFAULTS, { floorMs: 25, p99Multiple: 3, capMs: 250 });
    assert.equal(timeout.adaptive, true);
    assert.equal(timeout.ms, 250, 'nothing is known of the store yet');
    timeout.record(1);
    assert.equal(timeout.ms, 25, 'a fast store sits at the floor');
    for (let i = 0; i < 300; i++) timeout.record(i % 50 === 0 ? 20 : 2);
    assert.equal(timeout.ms, 60, 'five of the last 256 answers took 20 ms: the p99 is 20, the timeout 3 x 20');
    for (let i = 0; i < 256; i++) timeout.record(90);
    assert.equal(timeout.ms, 250, 'a slow store meets the cap');
    for (let i = 0; i < 300; i++) timeout.record(0.5);
    assert.equal(timeout.ms, 25, 'and comes back to the floor once it is fast again');
  });

  test('with few answers the p99 is their maximum', () => {
    const timeout = StoreTimeout.of({ floorMs: 1, p99Multiple: 2, capMs: 1000 }, 'T.timeoutMs');
    for (const ms of [3, 40, 5]) timeout.record(ms);
    assert.equal(timeout.ms, 80);
  });

  test('a fixed timeout ignores latencies; Infinity means no deadline', () => {
    const fixed = StoreTimeout.of(70, 'T.timeoutMs');
    fixed.record(500);
    assert.deepEqual([fixed.adaptive, fixed.ms, fixed.maxMs, fixed.describe()], [false, 70, 70, '70 ms']);
    assert.equal(StoreTimeout.of(Infinity, 'T.timeoutMs').ms, Infinity);
  });

  test('describe says what the adaptive timeout is made of', () => {
    assert.equal(StoreTimeout.of({}, 'T').describe(), '250 ms (adaptive: 3 × the recent p99, between 25 and 250 ms)');
  });

  test('bad options are typed errors naming the option', () => {
    const bad: Array<[unknown, RegExp]> = [
      [0, /T\.timeoutMs must be a number of ms above 0/],
      [-5, /above 0/],
      ['100', /T\.timeoutMs must be a number of ms or \{ floorMs, p99Multiple, capMs \}/],
      [{ floorMs: 0 }, /T\.timeoutMs\.floorMs must be a finite number above 0, got 0/],
      [{ capMs: Infinity }, /T\.timeoutMs\.capMs must be a finite number above 0/],
      [{ floorMs: 300, capMs: 100 }, /T\.timeoutMs\.floorMs \(300\) must not be above T\.timeoutMs\.capMs \(100\)/],
      [{ flooMs: 10 }, /T\.timeoutMs\.flooMs is not an option of an adaptive timeout/],
    ];
    for (const [option, message] of bad) {
      assert.throws(
        () => StoreTimeout.of(option, 'T.timeoutMs'),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && message.test(e.message),
        String(option),
      );
    }
  });
});

describe('DeadlineQueue: one timer, deadlines in any order, abandoned by target', () => {
  const never = new Promise<never>(() => {});
  const timedOut = (): Error => new Error('timed out');

  test('a call with a shorter timeout than its elders is cut off at its own deadline', async () => {
    const clock = new ManualClock();
    const queue = new DeadlineQueue(clock, clock);
    const order: string[] = [];
    const long = watch(queue, clock, never, 250, timedOut).catch(() => order.push('long'));
    const short = watch(queue, clock, never, 25, timedOut).catch(() => order.push('short'));
    assert.equal(clock.timerCount(), 1, 'one timer for every call');
    clock.advance(25);
    await short;
    assert.deepEqual(order, ['short']);
    clock.advance(225);
    await long;
    assert.deepEqual(order, ['short', 'long']);
    assert.equal(clock.timerCount(), 0, 'no timer once nothing is pending');
  });

  test('abandon cuts off the calls to one target now, and leaves the others to their deadlines', async () => {
    const clock = new ManualClock();
    const queue = new DeadlineQueue(clock, clock);
    const ended: string[] = [];
    const a1 = watch(queue, clock, never, 100, timedOut, undefined, 'A').catch(() => ended.push('a1'));
    const b = watch(queue, clock, never, 100, timedOut, undefined, 'B').catch(() => ended.push('b'));
    const a2 = watch(queue, clock, never, 100, timedOut, undefined, 'A').catch(() => ended.push('a2'));
    queue.abandon('A');
    await Promise.all([a1, a2]);
    assert.deepEqual(ended, ['a1', 'a2']);
    assert.equal(queue.size, 1);
    clock.advance(100);
    await b;
    assert.deepEqual(ended, ['a1', 'a2', 'b']);
  });

  test('an answer after the deadline goes to late, never to the caller', async () => {
    const clock = new ManualClock();
    const queue = new DeadlineQueue(clock, clock);
    let answer!: (value: string) => void;
    const operation = new Promise<string>((resolve) => (answer = resolve));
    const lateAnswers: string[] = [];
    const call = watch(queue, clock, operation, 10, timedOut, (value) => lateAnswers.push(value));
    clock.advance(10);
    await assert.rejects(call, /timed out/);
    answer('ran after all');
    await operation;
    assert.deepEqual(lateAnswers, ['ran after all']);
  });

  test("an answer that arrived while this process's event loop stalled past the deadline wins over the deadline", async () => {
    // The echo runs in another process, so that it answers while this one is stalled.
    const echo = spawn(
      process.execPath,
      [
        '-e',
        "require('net').createServer((s) => s.on('data', (d) => s.write(d))).listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [portLine] = (await once(echo.stdout!, 'data')) as [Buffer];
    const socket = connect(Number(String(portLine).trim()), '127.0.0.1');
    await once(socket, 'connect');
    try {
      const queue = new DeadlineQueue(monotonicClock, systemTimers);
      const answer = once(socket, 'data').then(([data]) => String(data));
      socket.write('pong');
      const call = watch(queue, monotonicClock, answer, 20, timedOut);
      // A stall of the event loop (a long synchronous task) past the deadline, while the answer
      // comes in: both the timer and the socket are ready when the loop turns again.
      const until = performance.now() + 150;
      while (performance.now() < until);
      assert.equal(await call, 'pong', 'the answer was read before the deadline was acted on');
    } finally {
      socket.destroy();
      echo.kill();
    }
  });
});
