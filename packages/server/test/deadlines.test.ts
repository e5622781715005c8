/** Deadlines on a manual clock and timer: each expires at its start plus the timeout, cancelled ones never, one timer at a time. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deadlines } from '../src/gateway/deadlines.js';

function manual(): { nowMs: number; armed: Array<{ at: number; fn: () => void }>; run(toMs: number): void } {
  const clock = {
    nowMs: 0,
    armed: [] as Array<{ at: number; fn: () => void }>,
    run(toMs: number) {
      for (;;) {
        const next = clock.armed.sort((a, b) => a.at - b.at)[0];
        if (next === undefined || next.at > toMs) break;
        clock.armed.shift();
        clock.nowMs = next.at;
        next.fn();
      }
      clock.nowMs = toMs;
    },
  };
  return clock;
}

test('each deadline expires at its start plus the timeout; a cancelled one never; one timer at a time', () => {
  const clock = manual();
  const deadlines = new Deadlines({
    timeoutMs: 100,
    now: () => clock.nowMs,
    setTimer: (fn, ms) => {
      const t = { at: clock.nowMs + ms, fn };
      clock.armed.push(t);
      return t;
    },
    clearTimer: (t) => clock.armed.splice(clock.armed.indexOf(t as never), 1),
  });
  const fired: Array<[string, number]> = [];
  const at = (name: string) => ({ expire: () => void fired.push([name, clock.nowMs]) });
  deadlines.start(at('a'));
  clock.run(30);
  const b = deadlines.start(at('b'));
  clock.run(40);
  deadlines.start(at('c'));
  assert.equal(clock.armed.length, 1, 'one timer for the line');
  clock.run(50);
  b.cancel();
  clock.run(1000);
  assert.deepEqual(fired, [
    ['a', 100],
    ['c', 140],
  ]);
  assert.equal(clock.armed.length, 0, 'no timer once the line is empty');
  deadlines.start(at('d'));
  deadlines.close();
  clock.run(5000);
  assert.deepEqual(fired.length, 2, 'closed: nothing more expires');
});

test('answered deadlines are let go at the next start: the line holds about the requests in flight', () => {
  let nowMs = 0;
  const deadlines = new Deadlines({
    timeoutMs: 30_000,
    now: () => nowMs,
    setTimer: () => 1,
    clearTimer: () => undefined,
  });
  const held = deadlines.start({ expire: () => undefined });
  for (let i = 0; i < 10_000; i++) {
    nowMs++;
    deadlines.start({ expire: () => undefined }).cancel();
  }
  const line = deadlines as unknown as { line: unknown[]; head: number };
  assert.equal(line.line.length - line.head, 10_001, 'behind a live head, answered ones wait their turn');
  held.cancel();
  deadlines.start({ expire: () => undefined });
  assert.equal(line.line.length - line.head, 1, 'once the head is answered, all answered before the new one go');
});
