import { slidingWindowCounter, type Algorithm } from '../../../src/index.js';
import type { Group } from '../suite.js';
import { consume, no, ok, peek, refund } from './steps.js';

/**
 * subWindowGroup: limit 4 per 1000 ms in 4 sub-windows of 250 ms, aligned to multiples of 250.
 * Sub-window k is [250k, 250(k + 1)) and leaves the count at 250(k + 4).
 */
export function subWindowGroup(): Group {
  const four = (): Algorithm => slidingWindowCounter({ limit: 4, windowMs: 1000, subWindows: 4 });
  return {
    name: 'sliding window counter (sub-windows)',
    tables: [
      {
        name: 'a fresh key',
        algorithm: four,
        steps: [peek(1100, 'a', 0, ok(4, 0)), consume(1100, 'a', 1, ok(3, 900))],
      },
      {
        name: 'sub-windows leave one by one; retryAfterMs is exact',
        algorithm: four,
        steps: [
          consume(1000, 'a', 1, ok(3, 1000)), // sub-window 4, leaves at 2000
          consume(1300, 'a', 1, ok(2, 950)), // 5, leaves at 2250
          consume(1600, 'a', 2, ok(0, 900)), // 6, leaves at 2500
          consume(1700, 'a', 1, no(0, 300, 800)),
          consume(1700, 'a', 2, no(0, 550, 800)),
          consume(1700, 'a', 3, no(0, 800, 800)),
          peek(1999, 'a', 1, no(0, 1, 501)),
          consume(2000, 'a', 1, ok(0, 1000)), // 8, leaves at 3000
          peek(2249, 'a', 1, no(0, 1, 751)),
          consume(2250, 'a', 1, ok(0, 1000)), // 9, leaves at 3250
          peek(3249, 'a', 0, ok(3, 1)),
          peek(3250, 'a', 0, ok(4, 0)),
        ],
      },
      {
        name: 'refund gives back units, never above the limit',
        algorithm: four,
        steps: [
          consume(1000, 'a', 3, ok(1, 1000)),
          refund(1100, 'a', 2),
          peek(1100, 'a', 0, ok(3, 900)),
          refund(1100, 'a', 4), // more than the 1 still counted
          peek(1100, 'a', 0, ok(4, 0)),
          consume(1100, 'a', 4, ok(0, 900)),
          consume(1100, 'a', 1, no(0, 900, 900)),
          refund(0, 'b', 1),
          peek(0, 'b', 0, ok(4, 0)),
        ],
      },
      {
        // As in the fixed window and the log: behind the newest sub-window, a request counts in it.
        name: 'a clock going back counts in the newest sub-window',
        algorithm: four,
        steps: [
          consume(1600, 'a', 2, ok(2, 900)),
          consume(1100, 'a', 1, ok(1, 1400)), // counted in sub-window 6, which leaves at 2500
          peek(2250, 'a', 0, ok(1, 250)),
          peek(2500, 'a', 0, ok(4, 0)),
          consume(1600, 'b', 4, ok(0, 900)),
          consume(1100, 'b', 1, no(0, 1400, 1400)),
          peek(2499, 'b', 1, no(0, 1, 1)),
          consume(2500, 'b', 1, ok(3, 1000)),
        ],
      },
      {
        name: 'cost 0 is always allowed and spends nothing',
        algorithm: four,
        steps: [consume(0, 'a', 0, ok(4, 0)), consume(0, 'a', 4, ok(0, 1000)), consume(300, 'a', 0, ok(0, 700))],
      },
      {
        name: 'fractional costs',
        algorithm: four,
        steps: [
          consume(0, 'a', 1.5, ok(2, 1000)),
          consume(0, 'a', 2.5, ok(0, 1000)),
          consume(250, 'a', 0.5, no(0, 750, 750)),
          peek(999, 'a', 0.5, no(0, 1, 1)),
          consume(1000, 'a', 0.5, ok(3, 1000)),
        ],
      },
    ],
  };
}
