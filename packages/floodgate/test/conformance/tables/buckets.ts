import { leakyBucket, tokenBucket, type Algorithm } from '../../../src/index.js';
import type { Group, Table } from '../suite.js';
import { consume, no, ok, peek, refund } from './steps.js';

type Make = (capacity: number, perSecond: number) => Algorithm;

/**
 * bucketGroups returns the same tables for the token bucket and the leaky bucket (meter): with the
 * same numbers their decisions are equal. Tokens are `capacity - level` for the meter.
 *
 * Most tables use capacity 4 at 2 per second: one unit every 500 ms, so
 * remaining = floor(tokens), retryAfterMs = ceil((cost - tokens) * 500),
 * resetMs = ceil((4 - tokens after) * 500).
 */
export function bucketGroups(): Group[] {
  return [
    {
      name: 'token bucket',
      tables: bucketTables((capacity, refillPerSecond) => tokenBucket({ capacity, refillPerSecond })),
    },
    {
      name: 'leaky bucket',
      tables: bucketTables((capacity, leakPerSecond) => leakyBucket({ capacity, leakPerSecond })),
    },
  ];
}

function bucketTables(make: Make): Table[] {
  const four = (): Algorithm => make(4, 2);
  return [
    {
      name: 'a fresh key is full',
      algorithm: four,
      steps: [peek(1000, 'a', 0, ok(4, 0)), consume(1000, 'a', 1, ok(3, 500))],
    },
    {
      name: 'exhausting the bucket at one instant',
      algorithm: four,
      steps: [
        consume(10_000, 'a', 1, ok(3, 500)),
        consume(10_000, 'a', 1, ok(2, 1000)),
        consume(10_000, 'a', 2, ok(0, 2000)),
        consume(10_000, 'a', 1, no(0, 500, 2000)),
        consume(10_000, 'a', 4, no(0, 2000, 2000)),
        peek(10_000, 'a', 0, ok(0, 2000)),
      ],
    },
    {
      name: 'refill is continuous and capped at capacity',
      algorithm: four,
      steps: [
        consume(0, 'a', 4, ok(0, 2000)),
        peek(250, 'a', 0, ok(0, 1750)), // 0.5 tokens
        consume(250, 'a', 1, no(0, 250, 1750)),
        consume(500, 'a', 1, ok(0, 2000)), // exactly 1 token
        consume(1750, 'a', 2, ok(0, 1750)), // 2.5 tokens, 0.5 left
        consume(1750, 'a', 1, no(0, 250, 1750)),
        peek(100_000, 'a', 0, ok(4, 0)),
        consume(100_000, 'a', 4, ok(0, 2000)),
        consume(100_000, 'a', 1, no(0, 500, 2000)), // the long idle stored no more than 4
      ],
    },
    {
      // capacity 4 at 3 per second: a unit every 333.33 ms, so every duration is rounded up.
      name: 'retryAfterMs is exact: admitted then, refused 1 ms before',
      algorithm: () => make(4, 3),
      steps: [
        consume(0, 'a', 4, ok(0, 1334)),
        consume(0, 'a', 1, no(0, 334, 1334)),
        peek(333, 'a', 1, no(0, 1, 1001)), // 0.999 tokens
        consume(334, 'a', 1, ok(0, 1333)), // 1.002 tokens, 0.002 left
        consume(334, 'a', 2, no(0, 666, 1333)), // (2 - 0.002) * 1000 / 3 = 666
        peek(999, 'a', 2, no(1, 1, 668)), // 1.997 tokens
        consume(1000, 'a', 2, ok(0, 1334)), // 2 tokens exactly
      ],
    },
    {
      name: 'resetMs counts down to full',
      algorithm: four,
      steps: [
        consume(0, 'a', 1, ok(3, 500)),
        peek(200, 'a', 0, ok(3, 300)), // 3.4 tokens
        peek(499, 'a', 0, ok(3, 1)), // 3.998 tokens
        peek(500, 'a', 0, ok(4, 0)),
        peek(5000, 'a', 0, ok(4, 0)),
      ],
    },
    {
      name: 'refund gives back spent units, never above capacity',
      algorithm: four,
      steps: [
        consume(0, 'a', 3, ok(1, 1500)),
        refund(0, 'a', 2),
        peek(0, 'a', 0, ok(3, 500)),
        refund(0, 'a', 4), // 3 + 4 is above capacity
        peek(0, 'a', 0, ok(4, 0)),
        consume(0, 'a', 4, ok(0, 2000)),
        consume(0, 'a', 1, no(0, 500, 2000)), // the big refund stored no more than 4
        refund(1000, 'a', 1), // 2 refilled by now, plus 1
        peek(1000, 'a', 0, ok(3, 500)),
        refund(0, 'b', 1), // a key never seen is full already
        peek(0, 'b', 0, ok(4, 0)),
        consume(0, 'b', 4, ok(0, 2000)),
      ],
    },
    {
      // golang.org/x/time/rate's "time going backwards" row moves the last update back to an
      // admitted request's earlier time, so the span from there to the old update is refilled a
      // second time: one extra token per step back of one token's time, and on a store shared by
      // nodes whose clocks differ, the over-admission issue 20 measured. floodgate deliberately
      // differs: every step works at max(now, last update) and never moves the update back, so
      // behind the last update nothing refills until the clock has caught up, and every wait
      // stated (retryAfterMs, resetMs) includes that stall. Refused requests and peeks move nothing.
      name: 'a clock going backwards',
      algorithm: four,
      steps: [
        consume(1000, 'a', 1, ok(3, 500)),
        consume(0, 'a', 1, ok(2, 2000)), // works at 1000: full again 1000 ms after it
        consume(0, 'a', 2, ok(0, 3000)),
        consume(0, 'a', 1, no(0, 1500, 3000)),
        consume(500, 'a', 1, no(0, 1000, 2500)), // x/time/rate admits here: it refilled from 0
        consume(1000, 'a', 1, no(0, 500, 2000)),
        consume(1500, 'a', 1, ok(0, 2000)),
        consume(200, 'a', 1, no(0, 1800, 3300)), // behind the last update (1500): nothing refills
        peek(700, 'a', 1, no(0, 1300, 2800)),
        consume(2000, 'a', 1, ok(0, 2000)), // the refused request at 200 did not move the update back
        peek(2000, 'a', 0, ok(0, 2000)),
      ],
    },
    {
      name: 'cost 0 is always allowed and spends nothing',
      algorithm: four,
      steps: [
        consume(0, 'a', 0, ok(4, 0)),
        consume(0, 'a', 4, ok(0, 2000)),
        consume(0, 'a', 0, ok(0, 2000)),
        peek(0, 'a', 0, ok(0, 2000)),
        consume(500, 'a', 1, ok(0, 2000)),
      ],
    },
    {
      name: 'fractional costs',
      algorithm: four,
      steps: [
        consume(0, 'a', 0.5, ok(3, 250)),
        consume(0, 'a', 2.25, ok(1, 1375)), // 1.25 left
        consume(0, 'a', 1.5, no(1, 125, 1375)),
        peek(124, 'a', 1.5, no(1, 1, 1251)), // 1.498 tokens
        consume(125, 'a', 1.5, ok(0, 2000)),
      ],
    },
  ];
}
