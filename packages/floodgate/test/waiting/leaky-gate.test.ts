import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { LeakyGate, ManualClock, type GateTicket } from '../../src/index.js';
import { runs } from '../support/sweep.js';

const go = (waitMs: number): GateTicket => ({ rejected: false, waitMs });
const refused = (retryAfterMs: number): GateTicket => ({ rejected: true, retryAfterMs });

describe('LeakyGate: the leaky bucket as a queue for callers that wait themselves', () => {
  test('steps at fixed times: each caller is told its wait, or refused when capacity callers wait', () => {
    const gate = new LeakyGate({ intervalMs: 100, capacity: 2 });
    const steps: [number, GateTicket, number][] = [
      // [nowMs, answer, callers still waiting afterwards]
      [0, go(0), 0],
      [0, go(100), 1],
      [0, go(200), 2],
      [0, refused(100), 2],
      [50, refused(50), 2],
      [100, go(200), 2], // the turn at 100 is no longer waiting: a place is free
      [100, refused(100), 2],
      [1000, go(0), 0],
    ];
    for (const [nowMs, expected, waiting] of steps) {
      assert.deepEqual(gate.admit(nowMs), expected, `admit(${nowMs})`);
      assert.equal(gate.waitingAt(nowMs), waiting, `waitingAt(${nowMs})`);
    }
  });

  test('capacity 0: a caller goes through when its turn is now, and is refused otherwise', () => {
    const gate = new LeakyGate({ intervalMs: 100, capacity: 0 });
    assert.deepEqual([gate.admit(0), gate.admit(50), gate.admit(100)], [go(0), refused(50), go(0)]);
  });

  test('waits are whole ms rounded up; turns stay exactly intervalMs apart', () => {
    const gate = new LeakyGate({ intervalMs: 1000 / 3, capacity: 100 });
    const waits = [0, 1, 2, 3].map(() => gate.admit(0));
    assert.deepEqual(waits, [go(0), go(334), go(667), go(1000)]);
  });

  test('reads the clock when no time is given; refuses a time that is not finite', () => {
    const clock = new ManualClock(500);
    const gate = new LeakyGate({ intervalMs: 10, capacity: 1, clock });
    assert.deepEqual([gate.admit(), gate.admit(), gate.admit()], [go(0), go(10), refused(10)]);
    clock.advance(10);
    assert.equal(gate.waitingAt(), 0);
    assert.throws(() => gate.admit(Number.NaN), { code: 'INVALID_OPTION' });
  });

  test('a clock set back keeps the waits already handed out as long as they were', () => {
    const gate = new LeakyGate({ intervalMs: 100, capacity: 5 });
    gate.admit(10_000);
    gate.admit(10_000); // turn at 10,100
    assert.deepEqual(gate.admit(0), go(200), 'not a wait of 10,200 ms');
    assert.equal(gate.waitingAt(0), 2);
  });

  test('options are checked', () => {
    assert.throws(() => new LeakyGate({ intervalMs: -1, capacity: 1 }), { option: 'LeakyGate.intervalMs' });
    assert.throws(() => new LeakyGate({ intervalMs: 1 } as never), { option: 'LeakyGate.capacity' });
    assert.throws(() => new LeakyGate({ intervalMs: 1, capacity: 0.5 }), { option: 'LeakyGate.capacity' });
  });

  test('property: turns are at least intervalMs apart, at most capacity wait, refusals only when full', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 0, max: 8 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 200 }),
        (intervalMs, capacity, gaps) => {
          const gate = new LeakyGate({ intervalMs, capacity });
          let nowMs = 0;
          let lastTurnMs = -Infinity;
          const turns: number[] = [];
          for (const gap of gaps) {
            nowMs += gap;
            const waitingBefore = turns.filter((t) => t > nowMs).length;
            const ticket = gate.admit(nowMs);
            if (ticket.rejected) {
              assert.ok(
                waitingBefore >= capacity && lastTurnMs + intervalMs > nowMs,
                'refused only when full and it would wait',
              );
              assert.ok(ticket.retryAfterMs >= 1);
              continue;
            }
            const turnMs = nowMs + ticket.waitMs;
            assert.ok(turnMs >= lastTurnMs + intervalMs, `turn ${turnMs} too close to ${lastTurnMs}`);
            assert.ok(
              ticket.waitMs === 0 || turnMs === lastTurnMs + intervalMs,
              'no turn left unused while callers wait',
            );
            lastTurnMs = turnMs;
            turns.push(turnMs);
            assert.ok(turns.filter((t) => t > nowMs).length <= Math.max(capacity, 0), 'at most capacity waiting');
          }
        },
      ),
      { numRuns: runs(100) },
    );
  });
});
