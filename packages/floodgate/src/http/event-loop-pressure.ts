/**
 * Event-loop pressure: whether this process's recent event-loop delay is above a bound, read from
 * node's `monitorEventLoopDelay` histogram. This file imports nothing of node's: the adapters hand
 * it the monitor, so that the framework-neutral entry points still load on any runtime.
 */
import { monotonicClock, type Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { positiveInteger, positiveNumber, requireObject } from '../core/validate.js';

/** EventLoopDelayOptions configures {@link EventLoopPressure}. */
export interface EventLoopDelayOptions {
  /** The delay above which the loop is under pressure, in ms: when the recent p99 or mean exceeds it. */
  readonly maxMs: number;
  /** How long one measuring window lasts, in ms (default 1000); "recent" is this window and the one before. */
  readonly windowMs?: number;
  /** How often the loop is sampled, in ms (node's `resolution`, default 10), a whole number. */
  readonly resolutionMs?: number;
}

/**
 * DelayHistogram is what {@link EventLoopPressure} reads of node's `IntervalHistogram`: its values
 * are the time between two samples, in nanoseconds, so the resolution is part of each.
 */
export interface DelayHistogram {
  /** How many samples were recorded since the last reset. */
  readonly count: number;
  /** Their mean, in ns (NaN when there is none). */
  readonly mean: number;
  /** percentile returns the value at `percentile` (0 to 100), in ns. */
  percentile(percentile: number): number;
  /** reset drops every sample. */
  reset(): void;
  /** enable starts sampling. */
  enable(): boolean;
  /** disable stops sampling. */
  disable(): boolean;
}

/** DelayMonitor makes a histogram: node's `perf_hooks.monitorEventLoopDelay`, or a double in tests. */
export type DelayMonitor = (options: { resolution: number }) => DelayHistogram;

const NS_PER_MS = 1e6;

/**
 * EventLoopPressure tells whether the event loop is slower than `maxMs`: the p99 or the mean delay
 * of the running window, or of the window before it, is above the bound. A window is closed (the
 * histogram read and reset) by the first call to {@link pressed} after `windowMs`; no timer of its
 * own is set. Each sample's resolution is taken off, so `maxMs` is the delay itself.
 */
export class EventLoopPressure {
  private readonly maxNs: number;
  private readonly resolutionNs: number;
  private readonly windowMs: number;
  private windowStartMs: number;
  private lastWindowPressed = false;
  private stopped = false;

  /** Wraps `histogram` (enabled by {@link watchEventLoop}); options are checked already. */
  constructor(
    private readonly histogram: DelayHistogram,
    options: Required<EventLoopDelayOptions>,
    private readonly clock: Clock,
  ) {
    this.maxNs = options.maxMs * NS_PER_MS;
    this.resolutionNs = options.resolutionMs * NS_PER_MS;
    this.windowMs = options.windowMs;
    this.windowStartMs = clock.now();
  }

  /** pressed returns true when the recent p99 or mean delay is above `maxMs`; false once closed. */
  readonly pressed = (): boolean => {
    if (this.stopped) return false;
    const nowMs = this.clock.now();
    // A clock set back starts a new window too.
    if (nowMs - this.windowStartMs >= this.windowMs || nowMs < this.windowStartMs) {
      this.lastWindowPressed = this.over();
      this.histogram.reset();
      this.windowStartMs = nowMs;
    }
    return this.lastWindowPressed || this.over();
  };

  /** close stops sampling the loop; {@link pressed} answers false from then on. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.histogram.disable();
  }

  /** Whether the running window's samples, less the resolution, have a p99 or mean above the bound. */
  private over(): boolean {
    const h = this.histogram;
    if (h.count === 0) return false;
    return h.percentile(99) - this.resolutionNs > this.maxNs || h.mean - this.resolutionNs > this.maxNs;
  }
}

/**
 * watchEventLoop returns an {@link EventLoopPressure} over a histogram from `monitor`, which it
 * enables (one sampling timer, unreferenced, per call). `option` names the options in errors:
 * `maxMs` must be a number above 0, `windowMs` too, `resolutionMs` a whole number of at least 1.
 */
export function watchEventLoop(
  monitor: DelayMonitor,
  options: EventLoopDelayOptions,
  option: string,
  clock: Clock = monotonicClock,
): EventLoopPressure {
  const checked = checkDelayOptions(options, option);
  const histogram = monitor({ resolution: checked.resolutionMs });
  histogram.enable();
  return new EventLoopPressure(histogram, checked, clock);
}

function checkDelayOptions(options: EventLoopDelayOptions, option: string): Required<EventLoopDelayOptions> {
  const o = requireObject<EventLoopDelayOptions>(options, option);
  if (o.maxMs === undefined) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option}.maxMs is required: the event-loop delay in ms above which the process is under pressure, got ${describeValue(o.maxMs)}`,
      `${option}.maxMs`,
    );
  }
  return {
    maxMs: positiveNumber(o.maxMs, `${option}.maxMs`),
    windowMs: positiveNumber(o.windowMs ?? 1000, `${option}.windowMs`),
    resolutionMs: positiveInteger(o.resolutionMs ?? 10, `${option}.resolutionMs`),
  };
}
