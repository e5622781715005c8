import { ManualClock } from '../../src/core/clock.js';

/**
 * FakeStopwatch plays the part of Guava's test stopwatch: time only moves when someone sleeps, and
 * every sleep is logged, `R` for the limiter's and `U` for the test's own, in seconds rounded half
 * up to two places, plus the exact microseconds. Time is kept in nanoseconds, as Guava's is, and
 * mirrored into a ManualClock (in ms) for the limiter to read.
 */
export class FakeStopwatch {
  readonly clock = new ManualClock(0);
  readonly events: string[] = [];
  readonly eventMicros: number[] = [];
  private nanos = 0n;

  /** The limiter's sleep: logs an `R` event (even for 0) and moves time on. */
  readonly sleep = async (ms: number): Promise<void> => {
    this.log('R', BigInt(Math.round(ms * 1000)));
  };

  /** sleepMillis is the test's own sleep: logs a `U` event and moves time on. */
  sleepMillis(ms: number): void {
    this.log('U', BigInt(ms) * 1000n);
  }

  /** advanceNanos moves time on without logging anything. */
  advanceNanos(nanos: bigint): void {
    this.nanos += nanos;
    this.clock.set(Number(this.nanos / 1000n) / 1000);
  }

  private log(kind: 'R' | 'U', micros: bigint): void {
    this.events.push(`${kind}${formatSeconds(micros)}`);
    this.eventMicros.push(Number(micros));
    this.advanceNanos(micros * 1000n);
  }
}

/** formatSeconds returns `micros` as seconds with two decimals, rounded half up (Java's `%.2f`). */
export function formatSeconds(micros: bigint): string {
  const hundredths = (micros + 5000n) / 10000n;
  return `${hundredths / 100n}.${String(hundredths % 100n).padStart(2, '0')}`;
}
