/** A clock read once per turn of the event loop, for figures that need no finer time than that. */
import { systemClock, type Clock } from 'floodgate';

/**
 * LoopClock returns the time of the current event-loop turn: the first `now()` of a turn reads
 * `source` and every later one in the same turn returns that reading (as nginx caches its time
 * per event cycle). It is for the dashboard's counts, buckets and refusal times, where a turn
 * (well under a millisecond at ordinary load) is precision enough and a clock read (about 200 ns
 * on some virtual machines) per decision is not free. It never decides anything.
 *
 * `defer` schedules the end of the turn (default `setImmediate`, which runs after the I/O of the
 * current turn); tests pass their own.
 *
 * @example
 * const board = new Board({ clock: new LoopClock() });
 */
export class LoopClock implements Clock {
  private cachedMs: number | undefined;
  private readonly expire = (): void => {
    this.cachedMs = undefined;
  };

  constructor(
    private readonly source: Clock = systemClock,
    private readonly defer: (expire: () => void) => void = (expire) => void setImmediate(expire),
  ) {}

  /** now returns the time read at the first call of this turn, in ms. */
  now(): number {
    if (this.cachedMs === undefined) {
      this.cachedMs = this.source.now();
      this.defer(this.expire);
    }
    return this.cachedMs;
  }
}
