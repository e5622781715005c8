/**
 * Clock is the source of the current time, in milliseconds since the Unix epoch (fractions
 * allowed). Everything in floodgate that needs "now" takes a Clock, so tests can use a
 * {@link ManualClock}.
 */
export interface Clock {
  /** now returns the current time in milliseconds. */
  now(): number;
}

/**
 * systemClock reads the wall clock (`Date.now()`). It is the default `clock` option and the only
 * place in the core that reads real time.
 */
export const systemClock: Clock = Object.freeze({ now: (): number => Date.now() });

/**
 * ManualClock is a {@link Clock} that moves only when told to, for tests and simulations.
 * It may be set backwards, to test how limiters treat a clock that jumps back.
 *
 * @example
 * const clock = new ManualClock(0);
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 1, refillPerSecond: 1 }), clock });
 * limiter.consumeSync('a');   // allowed
 * clock.advance(1000);        // one token comes back
 */
export class ManualClock implements Clock {
  private nowMs: number;

  /** Creates a clock that reads `startMs` (default 0) until moved. */
  constructor(startMs = 0) {
    this.nowMs = startMs;
  }

  /** now returns the time the clock was last set or advanced to, in milliseconds. */
  now(): number {
    return this.nowMs;
  }

  /** advance moves the clock by `ms` (negative moves it back) and returns the new time. */
  advance(ms: number): number {
    if (!Number.isFinite(ms)) throw new RangeError(`ManualClock.advance: ms must be finite, got ${ms}`);
    this.nowMs += ms;
    return this.nowMs;
  }

  /** set moves the clock to `ms` exactly and returns it. */
  set(ms: number): number {
    if (!Number.isFinite(ms)) throw new RangeError(`ManualClock.set: ms must be finite, got ${ms}`);
    this.nowMs = ms;
    return this.nowMs;
  }
}
