/** How many requests wait in a queue-mode rule's line: now, and the deepest it was in each recent second. */
import { SECONDS } from './rates.js';

/**
 * QueueDepth returns a queue-mode rule's depth now and the deepest it was in each of the last
 * {@link SECONDS} whole seconds, from the moves the gateway reports (+1 when a request joins the
 * line, -1 when it leaves it, admitted, refused or gone). Memory: 60 doubles. A second with no
 * move keeps the depth it began with. Time going backwards counts in the latest second seen.
 *
 * @example
 * const q = new QueueDepth();
 * q.move(1, clock.now());
 * q.depth; // 1
 */
export class QueueDepth {
  /** The requests in the line now (never below 0). */
  depth = 0;
  private readonly peaks = new Float64Array(SECONDS);
  private latestSecond = -Infinity;

  /** move changes the depth by `delta` at `timeMs`. */
  move(delta: number, timeMs: number): void {
    const second = this.advance(Math.max(0, Math.floor(timeMs / 1000)));
    this.depth = Math.max(0, this.depth + delta);
    const slot = second % SECONDS;
    if (this.depth > this.peaks[slot]!) this.peaks[slot] = this.depth;
  }

  /** peaks returns the deepest the line was in each of the last {@link SECONDS} seconds, oldest first, the last being `nowMs`'s. */
  series(nowMs: number): number[] {
    const now = Math.floor(nowMs / 1000);
    const out: number[] = [];
    for (let s = now - SECONDS + 1; s <= now; s++) {
      const written = s <= this.latestSecond && s > this.latestSecond - SECONDS && s >= 0;
      // A second after the latest move held the depth as it is now; one before the first held none.
      out.push(written ? this.peaks[s % SECONDS]! : s > this.latestSecond ? this.depth : 0);
    }
    return out;
  }

  /** peak returns the deepest the line was over the last `seconds` seconds, this one included. */
  peak(seconds: number, nowMs: number): number {
    return Math.max(0, ...this.series(nowMs).slice(-Math.max(1, Math.min(seconds, SECONDS))));
  }

  /** Starts each second skipped since the latest move at the depth it had; returns the second to write. */
  private advance(second: number): number {
    if (second <= this.latestSecond) return this.latestSecond;
    const from = Math.max(this.latestSecond + 1, second - SECONDS + 1);
    for (let s = from; s <= second; s++) this.peaks[s % SECONDS] = this.depth;
    this.latestSecond = second;
    return second;
  }
}
