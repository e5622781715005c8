import { fixedWindow, type Algorithm } from '../../../src/index.js';
import type { Group } from '../suite.js';
import { consume, no, ok, peek, refund } from './steps.js';

/**
 * fixedWindowGroup: limit 3 per 1000 ms, windows [k * 1000, (k + 1) * 1000).
 * remaining = 3 - count; a refusal waits for the window's end; resetMs is the time to the window's
 * end while its count is above 0, else 0.
 */
export function fixedWindowGroup(): Group {
  const three = (): Algorithm => fixedWindow({ limit: 3, windowMs: 1000 });
  return {
    name: 'fixed window',
    tables: [
      {
        name: 'a fresh key',
        algorithm: three,
        steps: [peek(1200, 'a', 0, ok(3, 0)), consume(1200, 'a', 1, ok(2, 800))],
      },
      {
        name: 'exhausting a window',
        algorithm: three,
        steps: [
          consume(1200, 'a', 1, ok(2, 800)),
          consume(1200, 'a', 1, ok(1, 800)),
          consume(1300, 'a', 1, ok(0, 700)),
          consume(1500, 'a', 1, no(0, 500, 500)),
          consume(1500, 'a', 3, no(0, 500, 500)),
          peek(1500, 'a', 0, ok(0, 500)),
        ],
      },
      {
        name: 'the window rolls; retryAfterMs is exact',
        algorithm: three,
        steps: [
          consume(1000, 'a', 3, ok(0, 1000)),
          consume(1400, 'a', 1, no(0, 600, 600)),
          peek(1999, 'a', 1, no(0, 1, 1)),
          peek(1999.5, 'a', 1, no(0, 1, 1)), // half a millisecond rounds up
          consume(2000, 'a', 1, ok(2, 1000)),
          consume(2000, 'a', 2, ok(0, 1000)),
          peek(3000, 'a', 0, ok(3, 0)),
        ],
      },
      {
        name: 'windows are aligned to multiples of windowMs',
        algorithm: three,
        steps: [
          consume(999, 'a', 3, ok(0, 1)),
          consume(999, 'a', 1, no(0, 1, 1)),
          consume(1000, 'a', 3, ok(0, 1000)),
          consume(60_000, 'b', 1, ok(2, 1000)),
          consume(60_999, 'b', 2, ok(0, 1)),
        ],
      },
      {
        name: 'refund gives back units of the current window only, never above the limit',
        algorithm: three,
        steps: [
          consume(1200, 'a', 3, ok(0, 800)),
          refund(1300, 'a', 2),
          peek(1300, 'a', 0, ok(2, 700)),
          refund(1300, 'a', 3), // more than the 1 still counted
          peek(1300, 'a', 0, ok(3, 0)),
          consume(1300, 'a', 3, ok(0, 700)),
          consume(1300, 'a', 1, no(0, 700, 700)),
          refund(2100, 'a', 2), // nothing was spent in this window
          consume(2100, 'a', 3, ok(0, 900)),
          consume(2100, 'a', 1, no(0, 900, 900)),
        ],
      },
      {
        name: 'a clock going back into an earlier window stays in the current one',
        algorithm: three,
        steps: [
          consume(1500, 'a', 2, ok(1, 500)),
          consume(900, 'a', 1, ok(0, 1100)), // counted in [1000, 2000), which ends 1100 ms later
          consume(900, 'a', 1, no(0, 1100, 1100)),
          peek(1999, 'a', 1, no(0, 1, 1)),
          consume(2000, 'a', 1, ok(2, 1000)),
          consume(1999, 'a', 2, ok(0, 1001)),
          consume(1999, 'a', 1, no(0, 1001, 1001)),
          consume(2500, 'b', 1, ok(2, 500)),
          consume(2100, 'b', 1, ok(1, 900)), // back within the same window
        ],
      },
      {
        name: 'cost 0 is always allowed and spends nothing',
        algorithm: three,
        steps: [
          consume(1500, 'a', 0, ok(3, 0)),
          consume(1500, 'a', 3, ok(0, 500)),
          consume(1500, 'a', 0, ok(0, 500)),
          peek(2000, 'a', 0, ok(3, 0)),
        ],
      },
      {
        name: 'fractional costs',
        algorithm: three,
        steps: [
          consume(0, 'a', 0.5, ok(2, 1000)),
          consume(0, 'a', 2.5, ok(0, 1000)),
          consume(0, 'a', 0.25, no(0, 1000, 1000)),
          consume(1000, 'a', 0.25, ok(2, 1000)),
        ],
      },
    ],
  };
}
