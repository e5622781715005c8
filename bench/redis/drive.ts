/** Load drivers for bench/redis.ts: closed loops (N in flight) and an open loop at a fixed rate. */
import { performance } from 'node:perf_hooks';

/** Decide is one decision on `key`: resolves when decided (allowed or not). */
export type Decide = (key: string) => Promise<unknown>;

/** Loop is what a closed loop measured: decisions per second and latency percentiles in ms. */
export interface Loop {
  readonly perSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** percentile returns the `q` quantile (0..1) of `sorted`, ascending. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * closedLoop keeps `inFlight` decisions outstanding for `durationMs` (after `warmupMs`), each worker
 * issuing its next as soon as the last is decided, on keys from `keyOf(i)`. With `timed: false` it
 * only counts decisions (no clock read and no sample per decision, so the loop's own cost stays
 * small beside a decision answered locally) and reports no latency.
 */
export async function closedLoop(
  decide: Decide,
  options: { inFlight: number; durationMs: number; warmupMs: number; keyOf: (i: number) => string; timed?: boolean },
): Promise<Loop> {
  const timed = options.timed ?? true;
  const latencies: number[] = [];
  let n = 0;
  let counted = 0;
  let measuring = false;
  let stop = false;
  const worker = async (): Promise<void> => {
    while (!stop) {
      const key = options.keyOf(n++);
      if (timed) {
        const startedMs = performance.now();
        await decide(key);
        if (measuring) latencies.push(performance.now() - startedMs);
      } else {
        await decide(key);
        if (measuring) counted++;
      }
      // A decision answered locally (the over-limit cache) settles without I/O: let timers run.
      if ((n & 1023) === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const workers = Array.from({ length: options.inFlight }, worker);
  await new Promise((resolve) => setTimeout(resolve, options.warmupMs));
  measuring = true;
  const startedMs = performance.now();
  await new Promise((resolve) => setTimeout(resolve, options.durationMs));
  measuring = false;
  const elapsedMs = performance.now() - startedMs;
  const count = timed ? latencies.length : counted;
  stop = true;
  await Promise.all(workers);
  latencies.sort((a, b) => a - b);
  return { perSec: (count / elapsedMs) * 1000, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) };
}

/** Sample is one decision of an open loop: its key, when it was asked, how long it took, whether Redis decided it, and whether it rejected. */
export interface OpenSample {
  readonly key: string;
  readonly startedMs: number;
  readonly latencyMs: number;
  readonly healthy: boolean;
  readonly failed: boolean;
}

/**
 * OpenLoop issues `perTick` decisions every 5 ms whatever happens to them (2,000/s at 10), as
 * traffic arriving at a server does, and records each outcome; `healthy(result)` says whether Redis
 * (not a failure policy) decided.
 */
export class OpenLoop {
  readonly samples: OpenSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private n = 0;
  private readonly pending = new Set<Promise<void>>();

  /** Creates an idle loop. */
  constructor(
    private readonly decide: Decide,
    private readonly options: { perTick: number; keys: number; healthy: (result: unknown) => boolean },
  ) {}

  /** start begins issuing. */
  start(): void {
    this.timer = setInterval(() => {
      for (let i = 0; i < this.options.perTick; i++) this.issue(`k${this.n++ % this.options.keys}`);
    }, 5);
  }

  /** stop stops issuing and waits for every decision to settle. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.pending]);
  }

  /** inFlight returns how many decisions are outstanding. */
  get inFlight(): number {
    return this.pending.size;
  }

  private issue(key: string): void {
    const startedMs = performance.now();
    const done = this.decide(key).then(
      (result) =>
        void this.samples.push({
          key,
          startedMs,
          latencyMs: performance.now() - startedMs,
          healthy: this.options.healthy(result),
          failed: false,
        }),
      () =>
        void this.samples.push({
          key,
          startedMs,
          latencyMs: performance.now() - startedMs,
          healthy: false,
          failed: true,
        }),
    );
    this.pending.add(done);
    void done.then(() => this.pending.delete(done));
  }
}
