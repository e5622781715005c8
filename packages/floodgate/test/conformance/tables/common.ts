import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Algorithm,
} from '../../../src/index.js';
import type { Group, Step } from '../suite.js';
import { consume, fails, ok, peek, reset } from './steps.js';

/** limitThree lists one policy of each algorithm whose fresh key admits exactly 3. */
export const limitThree: ReadonlyArray<readonly [name: string, make: () => Algorithm]> = [
  ['token bucket', () => tokenBucket({ capacity: 3, refillPerSecond: 1 })],
  ['leaky bucket', () => leakyBucket({ capacity: 3, leakPerSecond: 1 })],
  ['fixed window', () => fixedWindow({ limit: 3, windowMs: 1000 })],
  ['sliding window log', () => slidingWindowLog({ limit: 3, windowMs: 1000 })],
  ['sliding window counter (weighted)', () => slidingWindowCounter({ limit: 3, windowMs: 1000 })],
  ['sliding window counter (sub-windows)', () => slidingWindowCounter({ limit: 3, windowMs: 1000, subWindows: 4 })],
  ['gcra', () => gcra({ rate: 1, periodMs: 1000, maxBurst: 2 })],
];

const T = 5000; // no time passes in these tables

const peekSpendsNothing: Step[] = [
  peek(T, 'a', 3, { allowed: true, remaining: 0 }),
  peek(T, 'a', 3, { allowed: true, remaining: 0 }),
  peek(T, 'a', 1, { allowed: true, remaining: 2 }),
  consume(T, 'a', 3, { allowed: true, remaining: 0 }),
  peek(T, 'a', 1, { allowed: false, remaining: 0, reason: 'limit' }),
  consume(T, 'a', 1, { allowed: false, remaining: 0, reason: 'limit' }),
];

const keysAreIndependent: Step[] = [
  consume(T, 'a', 3, { allowed: true, remaining: 0 }),
  peek(T, 'b', 0, ok(3, 0)),
  consume(T, 'b', 1, { allowed: true, remaining: 2 }),
  consume(T, 'a', 1, { allowed: false, remaining: 0 }),
  peek(T, 'b', 0, { allowed: true, remaining: 2 }),
];

const resetForgets: Step[] = [
  consume(T, 'a', 3, { allowed: true, remaining: 0 }),
  consume(T, 'a', 1, { allowed: false }),
  reset(T, 'a'),
  peek(T, 'a', 0, ok(3, 0)),
  consume(T, 'a', 3, { allowed: true, remaining: 0 }),
  reset(T, 'never-seen'),
  peek(T, 'never-seen', 0, ok(3, 0)),
];

const badCostsChangeNothing: Step[] = [
  consume(T, 'a', 1, { allowed: true, remaining: 2 }),
  fails(T, 'consume', 'a', 4, 'COST_EXCEEDS_LIMIT'),
  fails(T, 'peek', 'a', 4, 'COST_EXCEEDS_LIMIT'),
  fails(T, 'consume', 'a', 1000, 'COST_EXCEEDS_LIMIT'),
  fails(T, 'consume', 'a', -1, 'INVALID_COST'),
  fails(T, 'peek', 'a', -1, 'INVALID_COST'),
  fails(T, 'consume', 'a', Number.NaN, 'INVALID_COST'),
  fails(T, 'consume', 'a', Infinity, 'INVALID_COST'),
  fails(T, 'consume', 'a', -Infinity, 'INVALID_COST'),
  peek(T, 'a', 0, { allowed: true, remaining: 2 }),
  consume(T, 'a', 2, { allowed: true, remaining: 0 }),
  fails(T, 'consume', 'a', 4, 'COST_EXCEEDS_LIMIT'), // still an error, not a refusal, when empty
  fails(T, 'consume', 'b', 4, 'COST_EXCEEDS_LIMIT'), // and on a key never seen
  peek(T, 'b', 0, ok(3, 0)),
];

/** commonGroups returns, for each algorithm, the tables whose answers every algorithm shares. */
export function commonGroups(): Group[] {
  return limitThree.map(([name, algorithm]) => ({
    name: `${name}: common`,
    tables: [
      { name: 'peek spends nothing', algorithm, steps: peekSpendsNothing },
      { name: 'keys are independent', algorithm, steps: keysAreIndependent },
      { name: 'reset forgets a key', algorithm, steps: resetForgets },
      { name: 'a bad cost throws and changes nothing', algorithm, steps: badCostsChangeNothing },
    ],
  }));
}
