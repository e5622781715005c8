/**
 * The limiter layer's hot paths beside the hand-written Map bucket, in one process, round by
 * round: every round runs each subject for about `--round-ms`, and each ratio is taken within a
 * round (so both sides saw the same machine load), then the median over rounds is printed.
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/cases/limits.ts [--rounds 15] [--round-ms 60] [--order harness|shuffled|both]
 *
 * Subjects: the Map bucket and floodgate (`consumeSync`, `await consume`), admitting and refusing
 * one hot key; floodgate with an observer that has no hooks (present, nothing listening); and two
 * limits decided together (`consumeAllSync`) beside one limit decided twice (`consumeSync` x2).
 * `--order harness` runs the subjects in the order listed here every round; `shuffled` in a new
 * random order each round. Nothing is asserted.
 */

import { parseArgs } from 'node:util';
import { Limiter, MemoryStore, consumeAllSync, tokenBucket, type LimitEntry } from 'floodgate';
import { MapTokenBucket } from '../subjects/map-bucket.js';
import { HOT_KEY, HUGE, HUGE_REFILL_PER_SECOND, TINY_REFILL_PER_SECOND } from '../subjects/settings.js';
import { median } from '../support/timing.js';

type Run = (n: number) => number | Promise<number>;

function limiterFor(admit: boolean, observer?: object): Limiter {
  const policy = admit ? tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }) : tokenBucket({ capacity: 1, refillPerSecond: TINY_REFILL_PER_SECOND });
  const limiter = new Limiter({ policy, store: new MemoryStore(), ...(observer === undefined ? {} : { observer }) });
  if (!admit) limiter.consumeSync(HOT_KEY);
  return limiter;
}

function mapFor(admit: boolean): MapTokenBucket {
  const bucket = admit ? new MapTokenBucket(HUGE, HUGE_REFILL_PER_SECOND) : new MapTokenBucket(1, TINY_REFILL_PER_SECOND);
  if (!admit) bucket.take(HOT_KEY);
  return bucket;
}

function syncLimiter(limiter: Limiter): Run {
  return (n) => {
    let admitted = 0;
    for (let i = 0; i < n; i++) if (limiter.consumeSync(HOT_KEY).allowed) admitted++;
    return admitted;
  };
}

function promiseLimiter(limiter: Limiter): Run {
  return async (n) => {
    let admitted = 0;
    for (let i = 0; i < n; i++) if ((await limiter.consume(HOT_KEY)).allowed) admitted++;
    return admitted;
  };
}

function subjects(): Record<string, Run> {
  const runs: Record<string, Run> = {};
  for (const admit of [true, false]) {
    const regime = admit ? 'admit' : 'deny';
    const map = mapFor(admit);
    runs[`map/sync/${regime}`] = (n) => {
      let admitted = 0;
      for (let i = 0; i < n; i++) if (map.take(HOT_KEY)) admitted++;
      return admitted;
    };
    const mapAsync = mapFor(admit);
    runs[`map/promise/${regime}`] = async (n) => {
      let admitted = 0;
      for (let i = 0; i < n; i++) if (await mapAsync.takeAsync(HOT_KEY)) admitted++;
      return admitted;
    };
    runs[`floodgate/sync/${regime}`] = syncLimiter(limiterFor(admit));
    runs[`floodgate/promise/${regime}`] = promiseLimiter(limiterFor(admit));
    runs[`observer-empty/sync/${regime}`] = syncLimiter(limiterFor(admit, {}));
  }
  const store = new MemoryStore();
  const a = new Limiter({ policy: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }), store });
  const b = new Limiter({ policy: tokenBucket({ capacity: HUGE / 2, refillPerSecond: HUGE_REFILL_PER_SECOND }), store });
  runs['two-limits/twice'] = (n) => {
    let admitted = 0;
    for (let i = 0; i < n; i++) {
      if (a.consumeSync(HOT_KEY).allowed) admitted++;
      if (b.consumeSync(HOT_KEY).allowed) admitted++;
    }
    return admitted;
  };
  const entries: LimitEntry[] = [{ limiter: a, key: HOT_KEY }, { limiter: b, key: HOT_KEY }];
  runs['two-limits/together'] = (n) => {
    let admitted = 0;
    for (let i = 0; i < n; i++) if (consumeAllSync(entries).allowed) admitted += 2;
    return admitted;
  };
  return runs;
}

/** Ratios printed: [label, numerator, denominator, decisions per call of the numerator ÷ of the denominator]. */
const RATIOS: ReadonlyArray<readonly [string, string, string]> = [
  ['sync allow ÷ Map', 'floodgate/sync/admit', 'map/sync/admit'],
  ['sync deny ÷ Map', 'floodgate/sync/deny', 'map/sync/deny'],
  ['promise allow ÷ Map', 'floodgate/promise/admit', 'map/promise/admit'],
  ['promise deny ÷ Map', 'floodgate/promise/deny', 'map/promise/deny'],
  ['observer {} ÷ none, allow', 'observer-empty/sync/admit', 'floodgate/sync/admit'],
  ['observer {} ÷ none, deny', 'observer-empty/sync/deny', 'floodgate/sync/deny'],
  ['two limits together ÷ one limit twice (decisions/s)', 'two-limits/together', 'two-limits/twice'],
];

async function timeRun(run: Run, n: number): Promise<number> {
  const t0 = performance.now();
  const r = run(n);
  if (typeof r !== 'number') await r;
  return performance.now() - t0;
}

/** Calls per round so that each subject takes about `roundMs`. */
async function calibrate(runs: Record<string, Run>, roundMs: number): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const [name, run] of Object.entries(runs)) {
    let n = 1000;
    let ms = await timeRun(run, n);
    for (let k = 0; k < 30 && ms < 20; k++) ms = await timeRun(run, (n *= 2));
    sizes[name] = Math.max(1000, Math.round((n / ms) * roundMs));
  }
  return sizes;
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function measure(order: 'harness' | 'shuffled', rounds: number, roundMs: number): Promise<Record<string, number[]>> {
  const runs = subjects();
  const sizes = await calibrate(runs, roundMs);
  await calibrate(runs, roundMs); // a second pass: every path warm before timing
  const rates: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((name) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    const names = order === 'harness' ? Object.keys(runs) : shuffled(Object.keys(runs));
    for (const name of names) {
      (globalThis as { gc?: () => void }).gc?.();
      const n = sizes[name]!;
      rates[name]!.push(n / (await timeRun(runs[name]!, n)));
    }
  }
  return rates;
}

function report(order: string, rates: Record<string, number[]>): void {
  console.log(`\norder: ${order}; million calls/s, median of ${rates['map/sync/admit']!.length} rounds`);
  for (const [name, samples] of Object.entries(rates)) console.log(`  ${name.padEnd(28)} ${(median(samples) / 1000).toFixed(2).padStart(7)}`);
  console.log('ratios (median of the per-round ratios, [min-max]):');
  for (const [label, top, bottom] of RATIOS) {
    const perRound = rates[top]!.map((rate, i) => rate / rates[bottom]![i]!);
    const fmt = (x: number): string => x.toFixed(2);
    console.log(`  ${label.padEnd(52)} ${fmt(median(perRound))}  [${fmt(Math.min(...perRound))}-${fmt(Math.max(...perRound))}]`);
  }
}

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, 'round-ms': { type: 'string', default: '60' }, order: { type: 'string', default: 'both' } } });
const rounds = Number(values.rounds);
const roundMs = Number(values['round-ms']);
const orders = values.order === 'both' ? (['harness', 'shuffled'] as const) : [values.order as 'harness' | 'shuffled'];
for (const order of orders) report(order, await measure(order, rounds, roundMs));
