/** How long each route's upstream took to answer, lately: the figures beside its rate-limit decisions. */
import { quantile } from './store-health.js';

/** How many recent forwarded requests are kept per route. */
const SAMPLES = 1024;

/** UpstreamLatencyView is one route's upstream over a recent window. */
export interface UpstreamLatencyView {
  /** Forwarded requests answered in the window (of the latest {@link SAMPLES} at most). */
  readonly requests: number;
  /** Of those, answers with a 5xx status (the upstream's or the gateway's 502/504). */
  readonly serverErrors: number;
  /** Percentiles of the time to the upstream's answer, in ms; undefined with none. */
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  readonly maxMs: number | undefined;
}

/**
 * UpstreamLatency returns, per route, the percentiles of the upstream's answer times over a
 * recent window, from the latest {@link SAMPLES} forwarded requests of each route (time, duration
 * and status: 17 KiB per route). Under more than that in the window, the figures are of the latest
 * ones (`requests` says how many). Routes are those the gateway forwards for, so bounded by the config;
 * {@link UpstreamLatency.retain} forgets the routes a reload removed.
 *
 * @example
 * const latency = new UpstreamLatency();
 * latency.record('api', 200, 12.5, clock.now());
 * latency.view('api', 10_000, clock.now()).p50Ms; // 12.5
 */
export class UpstreamLatency {
  private readonly routes = new Map<string, RouteSamples>();

  /** record keeps one forwarded request of `route` answered with `status` after `durationMs`, at `atMs`. */
  record(route: string, status: number, durationMs: number, atMs: number): void {
    let samples = this.routes.get(route);
    if (samples === undefined) this.routes.set(route, (samples = new RouteSamples()));
    samples.push(status, durationMs, atMs);
  }

  /** view returns `route`'s upstream over the `windowMs` before `nowMs` (all zeros for a route not forwarded yet). */
  view(route: string, windowMs: number, nowMs: number): UpstreamLatencyView {
    return this.routes.get(route)?.view(windowMs, nowMs) ?? EMPTY;
  }

  /** retain forgets the routes not in `active`. */
  retain(active: ReadonlySet<string>): void {
    for (const route of this.routes.keys()) if (!active.has(route)) this.routes.delete(route);
  }
}

const EMPTY: UpstreamLatencyView = {
  requests: 0,
  serverErrors: 0,
  p50Ms: undefined,
  p99Ms: undefined,
  maxMs: undefined,
};

class RouteSamples {
  private readonly atMs = new Float64Array(SAMPLES);
  private readonly durationMs = new Float64Array(SAMPLES);
  private readonly status = new Uint16Array(SAMPLES);
  private next = 0;
  private count = 0;

  push(status: number, durationMs: number, atMs: number): void {
    this.atMs[this.next] = atMs;
    this.durationMs[this.next] = durationMs;
    this.status[this.next] = status;
    this.next = (this.next + 1) % SAMPLES;
    if (this.count < SAMPLES) this.count++;
  }

  view(windowMs: number, nowMs: number): UpstreamLatencyView {
    const durations: number[] = [];
    let serverErrors = 0;
    for (let i = 0; i < this.count; i++) {
      if (nowMs - this.atMs[i]! > windowMs) continue;
      durations.push(this.durationMs[i]!);
      if (this.status[i]! >= 500) serverErrors++;
    }
    durations.sort((a, b) => a - b);
    return {
      requests: durations.length,
      serverErrors,
      p50Ms: quantile(durations, 0.5),
      p99Ms: quantile(durations, 0.99),
      maxMs: durations.at(-1),
    };
  }
}
