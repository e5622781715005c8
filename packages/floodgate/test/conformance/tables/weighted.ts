import { slidingWindowCounter, type Algorithm } from '../../../src/index.js';
import type { Group } from '../suite.js';
import { consume, no, ok, peek, refund } from './steps.js';

/**
 * weightedGroup: limit 4 per 1000 ms, weighted form. In the window starting at s,
 * estimate = prev * (1 - (now - s) / 1000) + curr; admit when estimate + cost <= 4.
 * resetMs runs to the moment the estimate is 0 again: the end of the next window while the current
 * window has a count, else the end of the current window while the previous one has a count.
 */
export function weightedGroup(): Group {
  const four = (): Algorithm => slidingWindowCounter({ limit: 4, windowMs: 1000 });
  return {
    name: 'sliding window counter (weighted)',
    tables: [
      {
        name: 'a fresh key',
        algorithm: four,
        steps: [peek(1250, 'a', 0, ok(4, 0)), consume(1250, 'a', 1, ok(3, 1750))],
      },
      {
        name: 'a full window is admitted again as its weight decays; retryAfterMs is exact',
        algorithm: four,
        steps: [
          consume(1000, 'a', 4, ok(0, 2000)),
          consume(1500, 'a', 1, no(0, 750, 1500)), // in the next window 4 * (1 - x) + 1 <= 4 from x = 1/4
          peek(2249, 'a', 1, no(0, 1, 751)), // estimate 3.004
          consume(2250, 'a', 1, ok(0, 1750)), // 3 + 1
          consume(2250, 'a', 1, no(0, 250, 1750)), // 4 * (1 - x) + 1 + 1 <= 4 from x = 1/2
          peek(2499, 'a', 1, no(0, 1, 1501)),
          consume(2500, 'a', 1, ok(0, 1500)),
          peek(3999, 'a', 0, ok(3, 1)), // 2 * 0.001 left of the window [2000, 3000)
          peek(4000, 'a', 0, ok(4, 0)),
        ],
      },
      {
        name: 'a request fits later in the same window',
        algorithm: four,
        steps: [
          consume(1900, 'a', 2, ok(2, 1100)),
          consume(2100, 'a', 1, ok(1, 1900)), // 2 * 0.9 + 1 = 2.8
          consume(2100, 'a', 2, no(1, 400, 1900)), // 2 * (1 - x) + 1 + 2 <= 4 from x = 1/2
          peek(2499, 'a', 2, no(1, 1, 1501)), // 2.002
          consume(2500, 'a', 2, ok(0, 1500)),
        ],
      },
      {
        name: 'two windows later a key is fresh',
        algorithm: four,
        steps: [
          consume(1000, 'a', 4, ok(0, 2000)),
          peek(2999, 'a', 0, ok(3, 1)),
          peek(3000, 'a', 0, ok(4, 0)),
          consume(3000, 'a', 4, ok(0, 2000)),
        ],
      },
      {
        name: 'refund gives back units of the current window, never above the limit',
        algorithm: four,
        steps: [
          consume(1000, 'a', 3, ok(1, 2000)),
          refund(1200, 'a', 2),
          peek(1200, 'a', 0, ok(3, 1800)),
          refund(1200, 'a', 4), // more than the 1 still counted
          peek(1200, 'a', 0, ok(4, 0)),
          consume(1200, 'a', 4, ok(0, 1800)),
          consume(1200, 'a', 1, no(0, 1050, 1800)), // 4 * (1 - x) + 1 <= 4 from x = 1/4 of [2000, 3000)
          refund(0, 'b', 1),
          peek(0, 'b', 0, ok(4, 0)),
        ],
      },
      {
        name: 'a clock going back into an earlier window stays in the current one',
        algorithm: four,
        steps: [
          consume(2500, 'a', 2, ok(2, 1500)),
          consume(1500, 'a', 1, ok(1, 2500)), // counted in [2000, 3000)
          peek(2999, 'a', 0, ok(1, 1001)),
          consume(1500, 'a', 2, no(1, 1834, 2500)), // fits from 3333.3: 3 * (1 - x) + 2 <= 4, x = 1/3
          peek(3333, 'a', 2, no(1, 1, 667)),
          consume(3334, 'a', 2, ok(0, 1666)),
        ],
      },
      {
        name: 'cost 0 is always allowed and spends nothing',
        algorithm: four,
        steps: [
          consume(1000, 'a', 0, ok(4, 0)),
          consume(1000, 'a', 4, ok(0, 2000)),
          consume(1500, 'a', 0, ok(0, 1500)),
        ],
      },
      {
        name: 'fractional costs',
        algorithm: four,
        steps: [
          consume(0, 'a', 1.5, ok(2, 2000)),
          consume(0, 'a', 2.5, ok(0, 2000)),
          consume(0, 'a', 0.5, no(0, 1125, 2000)), // 4 * (1 - x) + 0.5 <= 4 from x = 1/8
          peek(1124, 'a', 0.5, no(0, 1, 876)),
          consume(1125, 'a', 0.5, ok(0, 1875)),
        ],
      },
    ],
  };
}
