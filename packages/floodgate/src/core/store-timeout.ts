import { FloodgateError, describeValue } from './errors.js';

/**
 * AdaptiveTimeoutOptions shapes a timeout that follows the store's own latency: `p99Multiple`
 * times the p99 of its recent answers, never below `floorMs` nor above `capMs`. A healthy store
 * on a fast network sits at the floor; a store whose answers slow down gets more room, up to the
 * cap; a store that stops answering costs a caller at most the current timeout, once, before the
 * circuit opens and callers stop waiting at all.
 */
export interface AdaptiveTimeoutOptions {
  /** The shortest timeout, in ms (default 25). */
  readonly floorMs?: number;
  /** How many times the recent p99 latency a call may take (default 3). */
  readonly p99Multiple?: number;
  /** The longest timeout, in ms (default 250): the most any call waits on a sick store. */
  readonly capMs?: number;
}

/**
 * StoreTimeoutOption is how long a store call may take: a fixed number of ms (Infinity: no
 * deadline), or an adaptive timeout ({@link AdaptiveTimeoutOptions}; `{}` takes every default).
 */
export type StoreTimeoutOption = number | AdaptiveTimeoutOptions;

/** ADAPTIVE_TIMEOUT_DEFAULTS are the defaults of {@link AdaptiveTimeoutOptions}: the timeout of every store by default. */
export const ADAPTIVE_TIMEOUT_DEFAULTS: Required<AdaptiveTimeoutOptions> = Object.freeze({
  floorMs: 25,
  p99Multiple: 3,
  capMs: 250,
});

/** How many recent answers the p99 is taken over. */
const SAMPLES = 256;
/** Once the ring is this full, the timeout is recomputed every this many answers (before, at every answer). */
const RECOMPUTE_EVERY = 32;

/**
 * StoreTimeout is the deadline of a store's calls, fixed or adaptive. An adaptive one is
 * `clamp(p99Multiple × p99, floorMs, capMs)` over the last 256 answers that came in time; with
 * no answer yet it is the cap (nothing is known about the store), and with few, the p99 is their
 * maximum. Only answers in time are {@link record}ed: a call cut off says only that the store took
 * longer than the timeout, so a store that hangs or crawls never talks the timeout up.
 *
 * It holds no clock: the caller measures each latency and passes it in.
 *
 * @example
 * const timeout = StoreTimeout.of({ floorMs: 10 }, 'MyStore.timeoutMs');
 * const started = clock.now();
 * await call();
 * timeout.record(clock.now() - started);
 * timeout.ms; // the deadline for the next call
 */
export class StoreTimeout {
  /** adaptive is true when the timeout follows the recent latency. */
  readonly adaptive: boolean;
  private current: number;
  private readonly samples: Float64Array | undefined;
  private count = 0;
  private readonly floorMs: number;
  private readonly p99Multiple: number;
  private readonly capMs: number;

  private constructor(fixedMs: number | undefined, adaptive: Required<AdaptiveTimeoutOptions>) {
    this.adaptive = fixedMs === undefined;
    this.floorMs = adaptive.floorMs;
    this.p99Multiple = adaptive.p99Multiple;
    this.capMs = adaptive.capMs;
    this.current = fixedMs ?? adaptive.capMs;
    this.samples = fixedMs === undefined ? new Float64Array(SAMPLES) : undefined;
  }

  /**
   * of returns the timeout `option` describes (undefined: the adaptive defaults), naming `where`
   * in the typed error it throws for anything else.
   *
   * @throws FloodgateError `INVALID_OPTION` for a number not above 0, an unknown key, or bounds out of order.
   */
  static of(option: unknown, where: string): StoreTimeout {
    if (option === undefined) return new StoreTimeout(undefined, ADAPTIVE_TIMEOUT_DEFAULTS);
    if (typeof option === 'number') {
      if (!(option > 0))
        throw new FloodgateError(
          'INVALID_OPTION',
          `${where} must be a number of ms above 0 (Infinity: no deadline) or { floorMs, p99Multiple, capMs }, got ${describeValue(option)}`,
          where,
        );
      return new StoreTimeout(option, ADAPTIVE_TIMEOUT_DEFAULTS);
    }
    if (typeof option !== 'object' || option === null || Array.isArray(option)) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `${where} must be a number of ms or { floorMs, p99Multiple, capMs } (an adaptive timeout), got ${describeValue(option)}`,
        where,
      );
    }
    const given = option as Record<string, unknown>;
    for (const name of Object.keys(given)) {
      if (!(name in ADAPTIVE_TIMEOUT_DEFAULTS))
        throw new FloodgateError(
          'INVALID_OPTION',
          `${where}.${name} is not an option of an adaptive timeout (floorMs, p99Multiple, capMs)`,
          `${where}.${name}`,
        );
    }
    const pick = (name: keyof AdaptiveTimeoutOptions): number => {
      const value = given[name] ?? ADAPTIVE_TIMEOUT_DEFAULTS[name];
      if (typeof value !== 'number' || !Number.isFinite(value) || !(value > 0)) {
        throw new FloodgateError(
          'INVALID_OPTION',
          `${where}.${name} must be a finite number above 0, got ${describeValue(value)}`,
          `${where}.${name}`,
        );
      }
      return value;
    };
    const adaptive = { floorMs: pick('floorMs'), p99Multiple: pick('p99Multiple'), capMs: pick('capMs') };
    if (adaptive.floorMs > adaptive.capMs) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `${where}.floorMs (${adaptive.floorMs}) must not be above ${where}.capMs (${adaptive.capMs})`,
        `${where}.floorMs`,
      );
    }
    return new StoreTimeout(undefined, adaptive);
  }

  /** ms is the deadline of the next call, in ms. */
  get ms(): number {
    return this.current;
  }

  /** maxMs is the longest the timeout can be: the fixed timeout, or the adaptive one's cap. */
  get maxMs(): number {
    return this.adaptive ? this.capMs : this.current;
  }

  /** record takes the latency of one answer that came in time, in ms (a fixed timeout ignores it). */
  record(latencyMs: number): void {
    const samples = this.samples;
    if (samples === undefined || !(latencyMs >= 0)) return;
    samples[this.count % SAMPLES] = latencyMs;
    this.count++;
    if (this.count < SAMPLES || this.count % RECOMPUTE_EVERY === 0) this.recompute(samples);
  }

  /** describe says what the timeout is now, for error messages: `25 ms` or `25 ms (adaptive: ...)`. */
  describe(): string {
    const now = `${Math.round(this.current * 10) / 10} ms`;
    if (!this.adaptive) return now;
    return `${now} (adaptive: ${this.p99Multiple} × the recent p99, between ${this.floorMs} and ${this.capMs} ms)`;
  }

  private recompute(samples: Float64Array): void {
    const n = Math.min(this.count, SAMPLES);
    const sorted = samples.slice(0, n).sort();
    const p99 = sorted[Math.min(n - 1, Math.ceil(0.99 * n) - 1)]!;
    this.current = Math.min(this.capMs, Math.max(this.floorMs, this.p99Multiple * p99));
  }
}
