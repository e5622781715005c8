import { gcra, type Algorithm } from '../../../src/index.js';
import type { Group } from '../suite.js';
import { consume, no, ok, peek, refund } from './steps.js';

/**
 * gcraGroup: mostly rate 4 per 1000 ms with maxBurst 3, so T = 250 ms, tolerance 1000 ms, limit 4.
 * For a cost q: tat0 = max(tat, now), newTat = tat0 + 250q; refused when now < newTat - 1000.
 * Admitted: remaining = floor((now - (newTat - 1000)) / 250), resetMs = newTat - now.
 * Refused: retryAfterMs = newTat - 1000 - now, remaining = floor((now - (tat0 - 1000)) / 250),
 * resetMs = tat0 - now.
 */
export function gcraGroup(): Group {
  const four = (): Algorithm => gcra({ rate: 4, periodMs: 1000, maxBurst: 3 });
  return {
    name: 'gcra',
    tables: [
      {
        name: 'a fresh key',
        algorithm: four,
        steps: [peek(10_000, 'a', 0, ok(4, 0)), consume(10_000, 'a', 1, ok(3, 250))],
      },
      {
        name: 'a burst, then one every T; retryAfterMs is exact',
        algorithm: four,
        steps: [
          consume(0, 'a', 1, ok(3, 250)),
          consume(0, 'a', 1, ok(2, 500)),
          consume(0, 'a', 2, ok(0, 1000)),
          consume(0, 'a', 1, no(0, 250, 1000)),
          peek(249, 'a', 1, no(0, 1, 751)),
          consume(250, 'a', 1, ok(0, 1000)),
          consume(250, 'a', 2, no(0, 500, 1000)),
          peek(600, 'a', 0, ok(1, 650)),
          consume(750, 'a', 2, ok(0, 1000)),
          peek(1750, 'a', 0, ok(4, 0)),
        ],
      },
      {
        // rate 3 per 1000 ms, maxBurst 1: T = 333.33 ms, tolerance 666.67 ms, limit 2.
        name: 'an emission interval that is not a whole number of ms',
        algorithm: () => gcra({ rate: 3, periodMs: 1000, maxBurst: 1 }),
        steps: [
          consume(0, 'a', 2, ok(0, 667)),
          consume(0, 'a', 1, no(0, 334, 667)),
          peek(333, 'a', 1, no(0, 1, 334)),
          consume(334, 'a', 1, ok(0, 666)), // tat 1000
          consume(334, 'a', 1, no(0, 333, 666)), // admitted from 666.67
          peek(666, 'a', 1, no(0, 1, 334)),
          consume(667, 'a', 1, ok(0, 667)),
        ],
      },
      {
        name: 'refund moves the tat back, never before now',
        algorithm: four,
        steps: [
          consume(0, 'a', 4, ok(0, 1000)),
          refund(0, 'a', 2),
          peek(0, 'a', 0, ok(2, 500)),
          refund(100, 'a', 4), // would move the tat to 600 ms before now
          peek(100, 'a', 0, ok(4, 0)),
          consume(100, 'a', 4, ok(0, 1000)),
          consume(100, 'a', 1, no(0, 250, 1000)),
          refund(0, 'b', 1),
          peek(0, 'b', 0, ok(4, 0)),
        ],
      },
      {
        name: 'a clock going backwards finds the tat further ahead',
        algorithm: four,
        steps: [
          consume(1000, 'a', 2, ok(2, 500)), // tat 1500
          consume(500, 'a', 1, no(0, 250, 1000)),
          consume(750, 'a', 1, ok(0, 1000)),
          peek(1000, 'a', 0, ok(1, 750)),
        ],
      },
      {
        name: 'cost 0 is always allowed and spends nothing',
        algorithm: four,
        steps: [
          peek(0, 'a', 0, ok(4, 0)),
          consume(0, 'a', 0, ok(4, 0)),
          consume(0, 'a', 4, ok(0, 1000)),
          consume(0, 'a', 0, ok(0, 1000)),
          consume(250, 'a', 1, ok(0, 1000)),
        ],
      },
      {
        name: 'fractional costs',
        algorithm: four,
        steps: [
          consume(0, 'a', 0.5, ok(3, 125)),
          consume(0, 'a', 3.5, ok(0, 1000)),
          consume(0, 'a', 0.5, no(0, 125, 1000)),
          peek(124, 'a', 0.5, no(0, 1, 876)),
          consume(125, 'a', 0.5, ok(0, 1000)),
        ],
      },
    ],
  };
}
