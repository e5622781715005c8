/** The store's health as the dashboard shows it: recent round-trip latency, failures and circuit states. */
import type { Observer } from 'floodgate';

/** How many recent round trips are kept for latency percentiles. */
const SAMPLES = 2048;

/** StoreHealthView is the store's health at one time. */
export interface StoreHealthView {
  /** Round trips in the window, and how many failed. */
  readonly calls: number;
  readonly failedCalls: number;
  /** Latency percentiles of the kept round trips in the window, in ms; undefined with none. */
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  readonly maxMs: number | undefined;
  /** Failures answered by a failure policy, since the start, by policy. */
  readonly errorsByPolicy: Readonly<Record<string, number>>;
  /** The latest failure's message and time (ms since the epoch), if any. */
  readonly lastError: { readonly message: string; readonly atMs: number } | undefined;
  /** Each circuit's state by node (`default` for a standalone server). */
  readonly circuits: Readonly<Record<string, string>>;
  /** Whether the local fallback is deciding now. */
  readonly fallbackActive: boolean;
}

/**
 * StoreHealth returns what the store reported through the library's {@link Observer} seam:
 * {@link StoreHealth.observer} is the observer to give the store. It keeps the latest 2,048
 * round trips (time, duration, outcome: 48 KiB) for percentiles over a recent window, so under
 * more than 2,048 calls in that window the percentiles are of the latest 2,048 (`calls` says how
 * many there were in all only up to that bound).
 *
 * @example
 * const health = new StoreHealth();
 * const store = new RedisStore({ adapter, observer: health.observer });
 * health.view(10_000, Date.now()).p99Ms;
 */
export class StoreHealth {
  private readonly atMs = new Float64Array(SAMPLES);
  private readonly durationMs = new Float64Array(SAMPLES);
  private readonly ok = new Uint8Array(SAMPLES);
  private next = 0;
  private count = 0;
  private readonly errors: Record<string, number> = {};
  private lastError: StoreHealthView['lastError'];
  private readonly circuits: Record<string, string> = {};
  private fallbackActive = false;

  /** observer is the seam to hand the store: round trips, failures, circuit and fallback changes. */
  readonly observer: Observer = {
    storeCall: (e) => this.call(e.durationMs, e.ok, this.clockNow()),
    storeError: (e) => {
      this.errors[e.policy] = (this.errors[e.policy] ?? 0) + 1;
      this.lastError = { message: e.error.message, atMs: this.clockNow() };
    },
    circuit: (e) => {
      this.circuits[e.node ?? 'default'] = e.state;
    },
    fallback: (e) => {
      this.fallbackActive = e.active;
    },
  };

  /** @param clockNow returns the time events are stamped with, in ms since the epoch. */
  constructor(private readonly clockNow: () => number) {}

  /** call records one round trip of `durationMs` ending at `atMs`. */
  call(durationMs: number, ok: boolean, atMs: number): void {
    this.atMs[this.next] = atMs;
    this.durationMs[this.next] = durationMs;
    this.ok[this.next] = ok ? 1 : 0;
    this.next = (this.next + 1) % SAMPLES;
    if (this.count < SAMPLES) this.count++;
  }

  /** view returns the health over the `windowMs` before `nowMs`. */
  view(windowMs: number, nowMs: number): StoreHealthView {
    const durations: number[] = [];
    let failed = 0;
    for (let i = 0; i < this.count; i++) {
      if (nowMs - this.atMs[i]! > windowMs) continue;
      durations.push(this.durationMs[i]!);
      if (this.ok[i] === 0) failed++;
    }
    durations.sort((a, b) => a - b);
    return {
      calls: durations.length,
      failedCalls: failed,
      p50Ms: quantile(durations, 0.5),
      p99Ms: quantile(durations, 0.99),
      maxMs: durations.at(-1),
      errorsByPolicy: { ...this.errors },
      lastError: this.lastError,
      circuits: { ...this.circuits },
      fallbackActive: this.fallbackActive,
    };
  }
}

/** quantile returns the nearest-rank quantile `q` of sorted values; undefined for none. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
