/**
 * The concurrency limiter's cost: `node --conditions=floodgate-source --expose-gc --import tsx bench/concurrency.ts [--quick]`
 *
 * Per call, admitted and released at once on the real clock (so the window of an adaptive limit
 * closes every 250 calls, as it would under load), in one process, alternating rounds:
 *
 * - a hand-written bulkhead: a counter compared with a limit, with the two `performance.now()`
 *   reads any latency-aware limiter needs (at the grant and at the release), no permit object;
 * - `ConcurrencyLimiter({ limit })`: `tryAcquire()` then `release()` (one clock read, at the grant);
 * - `ConcurrencyLimiter({ adaptive: true })`: the same, each release feeding the estimator.
 *
 * Prints ns per call and the difference to the hand-written bulkhead; asserts nothing. Target
 * (issue 19): the adaptive limiter adds at most 1 µs a call.
 */
import { parseArgs } from 'node:util';
import { ConcurrencyLimiter, monotonicClock } from 'floodgate';
import { spread, table } from './support/format.js';
import { measureRate } from './support/timing.js';
import type { Rate } from './support/types.js';

const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const QUICK = flags.quick === true;
const TIMING = QUICK ? { warmupMs: 200, rounds: 3, roundMs: 100 } : { warmupMs: 500, rounds: 5, roundMs: 250 };

let held = 0;
let sink = 0;
const handWritten = (n: number): number => {
  let admitted = 0;
  for (let i = 0; i < n; i++) {
    if (held >= 64) continue;
    held++;
    const startMs = performance.now();
    admitted++;
    sink += performance.now() - startMs;
    held--;
  }
  return admitted;
};

const through =
  (limiter: ConcurrencyLimiter) =>
  (n: number): number => {
    let admitted = 0;
    for (let i = 0; i < n; i++) {
      const admission = limiter.tryAcquire();
      if (!admission.allowed) continue;
      admitted++;
      admission.release();
    }
    return admitted;
  };

const subjects: [string, (n: number) => number][] = [
  ['hand-written bulkhead (counter + 2 clock reads)', handWritten],
  ['ConcurrencyLimiter({ limit: 64 })', through(new ConcurrencyLimiter({ limit: 64, clock: monotonicClock }))],
  [
    'ConcurrencyLimiter({ adaptive: true })',
    through(new ConcurrencyLimiter({ adaptive: true, clock: monotonicClock })),
  ],
];
const rates = new Map<string, Rate[]>(subjects.map(([name]) => [name, []]));
for (let pass = 0; pass < (QUICK ? 1 : 3); pass++) {
  for (const [name, run] of subjects) rates.get(name)!.push(await measureRate(run, TIMING));
}
const best = (name: string): Rate => rates.get(name)!.reduce((a, b) => (b.median > a.median ? b : a));
const baseNs = 1e9 / best(subjects[0]![0]).median;
const rows = subjects.map(([name]) => {
  const rate = best(name);
  const ns = 1e9 / rate.median;
  return [name, ns.toFixed(0), spread(rate.min, rate.max, rate.median), (ns - baseNs).toFixed(0)];
});
console.log(
  table(['call (tryAcquire + release, real clock)', 'ns/call', '±', 'ns over hand-written'], rows, new Set([1, 2, 3])),
);
console.log(`  target: the adaptive limiter adds at most 1000 ns a call (sink ${sink > -1 ? 'ok' : ''})`);
