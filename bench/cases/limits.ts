/**
 * The limiter layer's hot paths beside the hand-written Map bucket. Every subject runs in its own
 * Node process (one library's JIT state never shapes another's), one after the other, and the
 * whole sequence is repeated `--cycles` times; each ratio is taken within a cycle (both sides ran
 * seconds apart, under the same machine load) and the median over cycles is printed, with the
 * range. `--order harness` runs the subjects in the order listed here every cycle; `shuffled` in
 * a new random order each cycle; `both` does each.
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/cases/limits.ts [--cycles 5] [--order both]
 *
 * Rates are calls per ms of this process's CPU time (see {@link timeRun}).
 *
 * Subjects: the Map bucket and floodgate (`consumeSync`, `await consume`), admitting and refusing
 * one hot key; floodgate with an observer that has no hooks (present, nothing listening); and two
 * limits decided together (`consumeAllSync`) beside one limit decided twice (`consumeSync` x2).
 * Nothing is asserted.
 */

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Limiter, MemoryStore, consumeAllSync, tokenBucket, type LimitEntry } from 'floodgate';
import { MapTokenBucket } from '../subjects/map-bucket.js';
import { HOT_KEY, HUGE, HUGE_REFILL_PER_SECOND, TINY_REFILL_PER_SECOND } from '../subjects/settings.js';
import { runChild } from '../support/spawn.js';
import { median } from '../support/timing.js';

type Run = (n: number) => number | Promise<number>;

function limiterFor(admit: boolean, observer?: object): Limiter {
  const policy = admit
    ? tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND })
    : tokenBucket({ capacity: 1, refillPerSecond: TINY_REFILL_PER_SECOND });
  const limiter = new Limiter({ policy, store: new MemoryStore(), ...(observer === undefined ? {} : { observer }) });
  if (!admit) limiter.consumeSync(HOT_KEY);
  return limiter;
}

function mapFor(admit: boolean): MapTokenBucket {
  const bucket = admit
    ? new MapTokenBucket(HUGE, HUGE_REFILL_PER_SECOND)
    : new MapTokenBucket(1, TINY_REFILL_PER_SECOND);
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
  const b = new Limiter({
    policy: tokenBucket({ capacity: HUGE / 2, refillPerSecond: HUGE_REFILL_PER_SECOND }),
    store,
  });
  runs['two-limits/twice'] = (n) => {
    let admitted = 0;
    for (let i = 0; i < n; i++) {
      if (a.consumeSync(HOT_KEY).allowed) admitted++;
      if (b.consumeSync(HOT_KEY).allowed) admitted++;
    }
    return admitted;
  };
  const entries: LimitEntry[] = [
    { limiter: a, key: HOT_KEY },
    { limiter: b, key: HOT_KEY },
  ];
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

/**
 * The CPU time (user + system, ms) this process spent on `run(n)`. CPU time, not wall time: on a
 * machine shared with other work, wall time counts the time other processes ran, CPU time does not.
 */
async function timeRun(run: Run, n: number): Promise<number> {
  const t0 = process.cpuUsage();
  const r = run(n);
  if (typeof r !== 'number') await r;
  const { user, system } = process.cpuUsage(t0);
  return (user + system) / 1000;
}

/** The child: warm `name` up, then time `rounds` rounds of about `roundMs`; print the median rate (calls/ms). */
async function measureOne(name: string, rounds: number, roundMs: number): Promise<void> {
  const run = subjects()[name];
  if (run === undefined) throw new Error(`no subject ${name}`);
  let n = 1000;
  const start = performance.now();
  let ms = await timeRun(run, n);
  while (ms < 20 || performance.now() - start < 300) {
    if (ms < 20) n *= 2;
    ms = await timeRun(run, n);
  }
  const size = Math.max(1000, Math.round((n / ms) * roundMs));
  const rates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    (globalThis as { gc?: () => void }).gc?.();
    rates.push(size / (await timeRun(run, size)));
  }
  console.log(JSON.stringify({ name, rate: median(rates) }));
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function cycles(order: 'harness' | 'shuffled', count: number): Promise<Record<string, number[]>> {
  const names = Object.keys(subjects());
  const rates: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let c = 0; c < count; c++) {
    for (const name of order === 'harness' ? names : shuffled(names)) {
      const { rate } = (await runChild(ROOT, 'bench/cases/limits.ts', ['--subject', name])) as { rate: number };
      rates[name]!.push(rate);
    }
  }
  return rates;
}

function report(order: string, rates: Record<string, number[]>): void {
  console.log(
    `\norder: ${order}; million calls/s, median of ${rates['map/sync/admit']!.length} cycles (one process per subject per cycle)`,
  );
  for (const [name, samples] of Object.entries(rates))
    console.log(`  ${name.padEnd(28)} ${(median(samples) / 1000).toFixed(2).padStart(7)}`);
  console.log('ratios (median of the per-cycle ratios, [min-max]):');
  for (const [label, top, bottom] of RATIOS) {
    const perCycle = rates[top]!.map((rate, i) => rate / rates[bottom]![i]!);
    const fmt = (x: number): string => x.toFixed(2);
    console.log(
      `  ${label.padEnd(52)} ${fmt(median(perCycle))}  [${fmt(Math.min(...perCycle))}-${fmt(Math.max(...perCycle))}]`,
    );
  }
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    subject: { type: 'string' },
    cycles: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    'round-ms': { type: 'string', default: '100' },
    order: { type: 'string', default: 'both' },
  },
});
if (values.subject !== undefined) {
  await measureOne(values.subject, Number(values.rounds), Number(values['round-ms']));
} else {
  const orders =
    values.order === 'both' ? (['harness', 'shuffled'] as const) : [values.order as 'harness' | 'shuffled'];
  for (const order of orders) report(order, await cycles(order, Number(values.cycles)));
}
