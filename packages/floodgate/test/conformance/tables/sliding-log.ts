import { slidingWindowLog, type Algorithm } from '../../../src/index.js';
import type { Group } from '../suite.js';
import { consume, fails, no, ok, peek, refund } from './steps.js';

/**
 * slidingLogGroup: limit 3 per 1000 ms. A request at t counts during [t, t + 1000). A refusal
 * waits until enough of the oldest entries leave; resetMs is the time until the newest leaves.
 */
export function slidingLogGroup(): Group {
  const three = (): Algorithm => slidingWindowLog({ limit: 3, windowMs: 1000 });
  return {
    name: 'sliding window log',
    tables: [
      {
        name: 'a fresh key',
        algorithm: three,
        steps: [peek(500, 'a', 0, ok(3, 0)), consume(500, 'a', 1, ok(2, 1000))],
      },
      {
        name: 'entries leave one by one; retryAfterMs is exact',
        algorithm: three,
        steps: [
          consume(0, 'a', 1, ok(2, 1000)),
          consume(200, 'a', 1, ok(1, 1000)),
          consume(400, 'a', 1, ok(0, 1000)),
          consume(600, 'a', 1, no(0, 400, 800)), // the entry at 0 leaves at 1000
          consume(600, 'a', 2, no(0, 600, 800)), // ... and the one at 200 at 1200
          consume(600, 'a', 3, no(0, 800, 800)),
          peek(999, 'a', 1, no(0, 1, 401)),
          consume(1000, 'a', 1, ok(0, 1000)),
          consume(1000, 'a', 1, no(0, 200, 1000)),
          peek(1199, 'a', 1, no(0, 1, 801)),
          peek(1200, 'a', 1, ok(0, 1000)),
        ],
      },
      {
        name: 'an entry of cost 2 leaves whole',
        algorithm: three,
        steps: [
          consume(0, 'a', 2, ok(1, 1000)),
          consume(300, 'a', 1, ok(0, 1000)),
          consume(500, 'a', 2, no(0, 500, 800)),
          consume(500, 'a', 1, no(0, 500, 800)),
          peek(999, 'a', 2, no(0, 1, 301)),
          consume(1000, 'a', 2, ok(0, 1000)),
          consume(1000, 'a', 1, no(0, 300, 1000)),
        ],
      },
      {
        name: 'refund removes entries, never below empty',
        algorithm: three,
        steps: [
          consume(0, 'a', 3, ok(0, 1000)),
          refund(100, 'a', 1),
          peek(100, 'a', 0, ok(1, 900)),
          refund(100, 'a', 3), // more than the 2 still logged
          peek(100, 'a', 0, ok(3, 0)),
          consume(100, 'a', 3, ok(0, 1000)),
          consume(100, 'a', 1, no(0, 1000, 1000)),
          refund(0, 'b', 1),
          peek(0, 'b', 0, ok(3, 0)),
          // Which of entries at different times a refund removes is left open; the count is not.
          consume(0, 'c', 1, ok(2, 1000)),
          consume(100, 'c', 1, ok(1, 1000)),
          refund(200, 'c', 1),
          peek(200, 'c', 0, { allowed: true, remaining: 2 }),
        ],
      },
      {
        name: 'an entry made while the clock is behind is recorded at the newest time',
        algorithm: three,
        steps: [
          consume(1000, 'a', 1, ok(2, 1000)),
          consume(500, 'a', 1, ok(1, 1500)), // recorded at 1000, not at 500
          peek(1500, 'a', 0, ok(1, 500)),
          peek(1999, 'a', 0, ok(1, 1)),
          peek(2000, 'a', 0, ok(3, 0)),
          consume(1000, 'b', 3, ok(0, 1000)),
          consume(200, 'b', 1, no(0, 1800, 1800)), // entries ahead of the clock still count
          peek(1999, 'b', 1, no(0, 1, 1)),
          consume(2000, 'b', 1, ok(2, 1000)),
        ],
      },
      {
        name: 'cost 0 is always allowed and records nothing',
        algorithm: three,
        steps: [
          consume(0, 'a', 0, ok(3, 0)),
          consume(0, 'a', 2, ok(1, 1000)),
          consume(500, 'a', 0, ok(1, 500)),
          consume(500, 'a', 1, ok(0, 1000)),
          consume(600, 'a', 0, ok(0, 900)),
        ],
      },
      {
        name: 'costs must be whole',
        algorithm: three,
        steps: [
          fails(0, 'consume', 'a', 0.5, 'INVALID_COST'),
          fails(0, 'peek', 'a', 1.5, 'INVALID_COST'),
          peek(0, 'a', 0, ok(3, 0)),
        ],
      },
    ],
  };
}
