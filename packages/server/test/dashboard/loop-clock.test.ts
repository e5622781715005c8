import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { LoopClock } from '../../src/dashboard/loop-clock.js';

describe('LoopClock: one clock read per event-loop turn', () => {
  it('returns one reading until the turn ends, then reads again', () => {
    const source = new ManualClock(1_000);
    let reads = 0;
    const counted = { now: () => (reads++, source.now()) };
    const ends: (() => void)[] = [];
    const clock = new LoopClock(counted, (expire) => ends.push(expire));
    assert.equal(clock.now(), 1_000);
    source.advance(5);
    assert.equal(clock.now(), 1_000, 'the same turn');
    assert.equal(reads, 1);
    assert.equal(ends.length, 1, 'one end scheduled per turn');
    ends.shift()!();
    assert.equal(clock.now(), 1_005);
    assert.equal(reads, 2);
  });

  it('moves on with the real event loop', async () => {
    const source = new ManualClock(0);
    const clock = new LoopClock(source);
    clock.now();
    source.advance(7);
    await new Promise((r) => setImmediate(r));
    assert.equal(clock.now(), 7);
  });
});
