/**
 * The waiting benchmark: `node --conditions=floodgate-source --expose-gc --import tsx bench/waiting.ts [--quick]`
 *
 * Measures the targets of acquire, the shaping queue and the gate, prints them with their ratios,
 * and asserts nothing:
 *
 * 1. Uncontended cost: `await limiter.acquire(key)` against `await limiter.consume(key)`, a token
 *    bucket that never runs out, the real clock. Target: acquire at most 1.5x consume.
 * 2. Memory: 100,000 acquire calls waiting on one key, on a manual clock. Retained bytes per
 *    waiter, as the many-keys case counts them ((delta heapUsed + delta external) / n, after a
 *    full GC), including the promise each call returns; the caller's own array holding those
 *    promises is allocated before the baseline. Also the number of timers. Targets: at most 200
 *    bytes a waiter, one timer.
 * 3. Drain rate: 10 s of manual-clock time, tasks or waiters far more than can drain; what came
 *    through, against the configured rate. Target: within 1%.
 */

import { parseArgs } from 'node:util';
import {
  Limiter,
  LeakyGate,
  ManualClock,
  ShapingQueue,
  fixedWindow,
  gcra,
  tokenBucket,
  type Algorithm,
} from 'floodgate';
import { HOT_KEY, HUGE, HUGE_REFILL_PER_SECOND } from './subjects/settings.js';
import { count, mps, ratio, spread, table } from './support/format.js';
import { fullGc, heapFigures } from './support/memory.js';
import { measureRate } from './support/timing.js';
import type { Rate } from './support/types.js';

const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const QUICK = flags.quick === true;
const TIMING = QUICK ? { warmupMs: 200, rounds: 3, roundMs: 100 } : { warmupMs: 500, rounds: 5, roundMs: 250 };
const WAITERS = 100_000;

// ---------------------------------------------------------------------------------------------
// 1. Uncontended: acquire against consume

/** One round each, alternately, so that drift on a busy machine hits both alike. */
async function uncontended(): Promise<string> {
  const limiter = new Limiter({ policy: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }) });
  const consume = async (n: number): Promise<number> => {
    let admitted = 0;
    for (let i = 0; i < n; i++) if ((await limiter.consume(HOT_KEY)).allowed) admitted++;
    return admitted;
  };
  const acquire = async (n: number): Promise<number> => {
    for (let i = 0; i < n; i++) await limiter.acquire(HOT_KEY);
    return n;
  };
  const options = { maxWaitMs: 1000 };
  const acquireWithOptions = async (n: number): Promise<number> => {
    for (let i = 0; i < n; i++) await limiter.acquire(HOT_KEY, options);
    return n;
  };
  const rates: Record<string, Rate[]> = { consume: [], acquire: [], options: [] };
  for (let pass = 0; pass < (QUICK ? 1 : 3); pass++) {
    rates.consume!.push(await measureRate(consume, TIMING));
    rates.acquire!.push(await measureRate(acquire, TIMING));
    rates.options!.push(await measureRate(acquireWithOptions, TIMING));
  }
  const best = (name: string): Rate => rates[name]!.reduce((a, b) => (b.median > a.median ? b : a));
  const base = best('consume');
  const row = (label: string, rate: Rate): string[] => [
    label,
    mps(rate.median),
    spread(rate.min, rate.max, rate.median),
    ratio(base.median / rate.median),
  ];
  return (
    table(
      ['call (await, admitted, real clock)', 'M ops/s', '±', 'time ÷ consume'],
      [
        row('limiter.consume(key)', base),
        row('limiter.acquire(key)', best('acquire')),
        row('limiter.acquire(key, { maxWaitMs })', best('options')),
      ],
      new Set([1, 2, 3]),
    ) + '\n  target: acquire time ÷ consume time ≤ 1.5 (the best of several passes of each)'
  );
}

// ---------------------------------------------------------------------------------------------
// 2. Memory: 100,000 waiters on one key

interface MemoryRow {
  readonly label: string;
  readonly bytesPerWaiter: number;
  readonly timers: number;
  readonly drained: number;
  readonly drainMs: number;
}

/**
 * Queues `WAITERS` acquire calls on one key, measures what they retain, then drains them all.
 * With `signals`, each caller passes a signal, and floodgate keeps an abort hook for each.
 */
async function queueMemory(label: string, policy: Algorithm, drainMs: number, signals = false): Promise<MemoryRow> {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy, clock });
  const held = new Array<Promise<void>>(WAITERS).fill(Promise.resolve());
  // A stand-in signal that keeps no listener: what is counted is floodgate's own hook per waiter.
  // (Node's AbortSignal bookkeeping does not measure stably this way; it is the caller's anyway.)
  const signal = { aborted: false, addEventListener() {}, removeEventListener() {} } as unknown as AbortSignal;
  await limiter.acquire('key'); // the key exists before the baseline, as in steady use
  await fullGc();
  const before = heapFigures();
  const options = signals ? { signal } : undefined;
  for (let i = 0; i < WAITERS; i++) held[i] = limiter.acquire('key', options);
  await fullGc();
  const after = heapFigures();
  const timers = clock.timerCount();
  let drained = 0;
  for (const promise of held) void promise.then(() => drained++);
  const started = performance.now();
  clock.set(drainMs);
  const elapsedMs = performance.now() - started;
  await fullGc();
  const bytes = after.heapUsed - before.heapUsed + (after.external - before.external);
  return { label, bytesPerWaiter: bytes / WAITERS, timers, drained, drainMs: elapsedMs };
}

async function memory(): Promise<string> {
  const rows = [
    // 1000 a second: 100,000 waiters drain in 100 s of clock time.
    await queueMemory('token bucket (books each waiter)', tokenBucket({ capacity: 1, refillPerSecond: 1000 }), 100_001),
    await queueMemory('GCRA (books each waiter)', gcra({ rate: 1000, periodMs: 1000, maxBurst: 0 }), 100_001),
    await queueMemory('fixed window (head retries)', fixedWindow({ limit: 1000, windowMs: 1000 }), 101_000),
    await queueMemory(
      'token bucket, each with a signal (see below)',
      tokenBucket({ capacity: 1, refillPerSecond: 1000 }),
      100_001,
      true,
    ),
  ];
  return (
    table(
      ['100,000 waiters on one key', 'bytes/waiter', 'timers', 'drained', 'drain ms'],
      rows.map((r) => [r.label, r.bytesPerWaiter.toFixed(1), String(r.timers), count(r.drained), r.drainMs.toFixed(0)]),
      new Set([1, 2, 3, 4]),
    ) +
    '\n  targets: ≤ 200 bytes/waiter (the returned promise included), a constant number of timers (1);' +
    "\n  the signal row is informational: floodgate's hook per waiter that has a signal, Node's listener not counted"
  );
}

// ---------------------------------------------------------------------------------------------
// 3. Drain rate over 10 s of manual-clock time

const DRAIN_MS = 10_000;

interface RateRow {
  readonly label: string;
  readonly perSecond: number;
  readonly through: number;
}

/**
 * What passed in [0, 10 s): the rate over exactly 10 s. Times are rounded to the µs first, so a
 * start at 10,000 ms reached by adding 1000/7 seventy times is not counted by float noise.
 */
function rateRow(label: string, perSecond: number, times: readonly number[]): RateRow {
  return { label, perSecond, through: times.filter((t) => Math.round(t * 1000) < DRAIN_MS * 1000).length };
}

async function shapingQueueRate(intervalMs: number): Promise<RateRow> {
  const clock = new ManualClock(0);
  const queue = new ShapingQueue({ intervalMs, capacity: 1_000_000, clock });
  const starts: number[] = [];
  for (let i = 0; i < 2 * (DRAIN_MS / intervalMs); i++) void queue.submit(() => starts.push(clock.now()));
  clock.set(DRAIN_MS);
  return rateRow(`ShapingQueue, intervalMs ${+intervalMs.toFixed(3)}`, 1000 / intervalMs, starts);
}

async function acquireRate(label: string, policy: Algorithm, perSecond: number): Promise<RateRow> {
  const clock = new ManualClock(0);
  const limiter = new Limiter({ policy, clock });
  const admitted: number[] = [];
  for (let i = 0; i < 3 * perSecond * (DRAIN_MS / 1000); i++)
    void limiter.acquire('key').then(() => admitted.push(clock.now()));
  // Step by 1 ms so that each admission is recorded at its own time.
  for (let t = 1; t <= DRAIN_MS + 1; t++) {
    clock.set(t);
    await Promise.resolve();
  }
  await fullGc();
  return rateRow(label, perSecond, admitted);
}

function gateRate(intervalMs: number): RateRow {
  const gate = new LeakyGate({ intervalMs, capacity: 1_000_000 });
  const turns: number[] = [];
  for (let i = 0; i < 2 * (DRAIN_MS / intervalMs); i++) {
    const ticket = gate.admit(0);
    if (!ticket.rejected) turns.push(ticket.waitMs);
  }
  return rateRow(`LeakyGate, intervalMs ${+intervalMs.toFixed(3)}`, 1000 / intervalMs, turns);
}

async function drainRates(): Promise<string> {
  const rows = [
    await shapingQueueRate(10),
    await shapingQueueRate(1000 / 7),
    gateRate(10),
    await acquireRate('acquire, token bucket 100/s', tokenBucket({ capacity: 1, refillPerSecond: 100 }), 100),
    await acquireRate('acquire, GCRA 100/s', gcra({ rate: 100, periodMs: 1000, maxBurst: 0 }), 100),
    await acquireRate('acquire, fixed window 10 per 100 ms', fixedWindow({ limit: 10, windowMs: 100 }), 100),
  ];
  return (
    table(
      ['10 s of manual clock', 'configured/s', 'measured/s', 'measured ÷ configured', 'error'],
      rows.map((r) => {
        const measured = r.through / (DRAIN_MS / 1000);
        const error = ((measured - r.perSecond) / r.perSecond) * 100;
        return [
          r.label,
          r.perSecond.toFixed(2),
          measured.toFixed(2),
          ratio(measured / r.perSecond),
          `${error.toFixed(2)}%`,
        ];
      }),
      new Set([1, 2, 3, 4]),
    ) + '\n  target: |error| ≤ 1%'
  );
}

// ---------------------------------------------------------------------------------------------

console.log(`floodgate waiting benchmark${QUICK ? ' (quick)' : ''}: node ${process.version}\n`);
console.log(await uncontended(), '\n');
console.log(await memory(), '\n');
console.log(await drainRates());
