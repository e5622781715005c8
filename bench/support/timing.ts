/** Throughput timing: warm up, then time several rounds and keep the median. */

import { fullGc } from './memory.js';
import type { Rate } from './types.js';

/** TimingOptions: how long to warm up, and how many timed rounds of about what length. */
export interface TimingOptions {
  readonly warmupMs: number;
  readonly rounds: number;
  readonly roundMs: number;
}

const nowMs = (): number => performance.now();

/** median of a non-empty list (the mean of the two middle values for an even length). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** summarize turns per-round rates into a {@link Rate}. */
export function summarize(samples: readonly number[], opsPerRound: number, admitted: number): Rate {
  return {
    median: median(samples),
    min: Math.min(...samples),
    max: Math.max(...samples),
    opsPerRound,
    samples,
    admittedFraction: admitted / (opsPerRound * samples.length),
  };
}

async function call(run: (n: number) => number | Promise<number>, n: number): Promise<number> {
  const r = run(n);
  return typeof r === 'number' ? r : await r;
}

/**
 * measureRate runs `run(n)` (n operations, returning how many were admitted): first for at least
 * `warmupMs`, doubling n until one batch takes 20 ms, which also estimates the rate; then `rounds`
 * timed batches sized to last about `roundMs` each, each after a full GC so one round's garbage is
 * not collected in the next. The GC inside a round (the garbage the library makes) is counted.
 */
export async function measureRate(run: (n: number) => number | Promise<number>, opts: TimingOptions): Promise<Rate> {
  let n = 1_000;
  let rate = 0;
  const start = nowMs();
  for (;;) {
    const t0 = nowMs();
    await call(run, n);
    const dt = nowMs() - t0;
    if (dt > 0) rate = n / dt;
    if (dt >= 20 && nowMs() - start >= opts.warmupMs) break;
    if (dt < 20) n *= 2;
  }
  const opsPerRound = Math.max(1_000, Math.round(rate * opts.roundMs));
  const samples: number[] = [];
  let admitted = 0;
  for (let r = 0; r < opts.rounds; r++) {
    await fullGc();
    const t0 = nowMs();
    admitted += await call(run, opsPerRound);
    const dt = nowMs() - t0;
    samples.push((opsPerRound / dt) * 1000);
  }
  return summarize(samples, opsPerRound, admitted);
}
