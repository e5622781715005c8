import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from 'floodgate';
import { OutcomeSeries, SECONDS } from '../../src/dashboard/rates.js';

describe('OutcomeSeries: outcome counts per second over the last minute', () => {
  it('averages the whole seconds before now, leaving the unfinished second out', () => {
    const clock = new ManualClock(1_700_000_000_000);
    const series = new OutcomeSeries();
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < 5; i++) series.add('admitted', clock.now());
      series.add('limited', clock.now());
      clock.advance(1_000);
    }
    series.add('admitted', clock.now());
    assert.equal(series.perSecond('admitted', 10, clock.now()), 5);
    assert.equal(series.perSecond(['admitted', 'limited'], 10, clock.now()), 6);
    assert.equal(series.perSecond('limited', 5, clock.now()), 1);
    assert.equal(series.total('admitted'), 51);
    assert.deepEqual(series.series(['admitted'], clock.now()).slice(-3), [5, 5, 1]);
  });

  it('drops seconds older than the minute, and clears skipped seconds when their bucket comes round', () => {
    const clock = new ManualClock(0);
    const series = new OutcomeSeries();
    series.add('limited', clock.now());
    clock.advance(SECONDS * 1_000);
    assert.equal(
      series.series(['limited'], clock.now()).reduce((a, b) => a + b, 0),
      0,
      'the first second is now out of the window',
    );
    series.add('limited', clock.now());
    clock.advance(1_000);
    assert.deepEqual(series.series(['limited'], clock.now()).slice(-2), [1, 0]);
    assert.equal(series.total('limited'), 2, 'totals keep everything');
  });

  it('counts a time going backwards in the latest second seen', () => {
    const series = new OutcomeSeries();
    series.add('admitted', 10_500);
    series.add('admitted', 3_000);
    assert.deepEqual(series.series(['admitted'], 10_999).slice(-1), [2]);
  });
});
