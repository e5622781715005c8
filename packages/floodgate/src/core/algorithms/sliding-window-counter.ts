import type { Algorithm } from '../algorithm.js';
import { FloodgateError } from '../errors.js';
import { durationMs, positiveInteger, positiveNumber, requireObject } from '../validate.js';
import { SubWindowCounter } from './sub-window-counter.js';
import { WeightedWindow } from './weighted-window.js';

/** SlidingWindowCounterOptions configures {@link slidingWindowCounter}. */
export interface SlidingWindowCounterOptions {
  /** Most cost admitted in a sliding window of `windowMs`. */
  limit: number;
  /** Window length in whole milliseconds (at least 1). */
  windowMs: number;
  /**
   * Cut the window into this many sub-windows and sum their counts (1 to 1000, dividing windowMs
   * exactly). Omitted: estimate from the previous window's count, weighted by overlap.
   */
  subWindows?: number;
}

/** MAX_SUB_WINDOWS is the finest cut {@link slidingWindowCounter} accepts. */
export const MAX_SUB_WINDOWS = 1000;

/**
 * slidingWindowCounter returns the sliding window counter {@link Algorithm}, in one of two forms.
 *
 * Without `subWindows`, the estimating form: the count of the current aligned window plus the
 * previous window's count weighted by the share of it the sliding window still covers. Three
 * numbers per key; it assumes the previous window's requests were spread evenly.
 *
 * With `subWindows: n`, the window is cut into n aligned sub-windows of `windowMs / n` and a
 * request is admitted while the last n sub-windows' counts plus its cost stay within `limit`:
 * exact to one sub-window, at n + 1 numbers per key.
 *
 * Time faults: in both forms the recorded window (or newest sub-window) never moves back and a
 * clock behind it counts there, with the previous window weighted in full, so a clock stepping
 * back in one process admits nothing extra. Nodes whose clocks are up to `skewSpreadMs` apart
 * still admit at most `limit` per window (per n consecutive sub-windows); on the real timeline
 * window bounds move by up to `skewSpreadMs`, and the estimating form weighs the previous window
 * up to `skewSpreadMs / windowMs` less on the fastest clock: about `limit * skewSpreadMs / windowMs`
 * more. See docs/time.md.
 *
 * @throws FloodgateError `INVALID_OPTION` for a limit that is not a finite number above 0, a
 * windowMs that is not a whole number of at least 1, or subWindows that is not a whole number
 * from 1 to {@link MAX_SUB_WINDOWS} dividing windowMs.
 * @example
 * const estimated = slidingWindowCounter({ limit: 100, windowMs: 60_000 });
 * const precise = slidingWindowCounter({ limit: 100, windowMs: 60_000, subWindows: 60 });
 */
export function slidingWindowCounter(options: SlidingWindowCounterOptions): Algorithm {
  const o = requireObject<SlidingWindowCounterOptions>(options, 'slidingWindowCounter');
  const limit = positiveNumber(o.limit, 'slidingWindowCounter.limit');
  const windowMs = durationMs(o.windowMs, 'slidingWindowCounter.windowMs');
  if (o.subWindows === undefined) return new WeightedWindow(limit, windowMs);
  const subWindows = positiveInteger(o.subWindows, 'slidingWindowCounter.subWindows');
  if (subWindows > MAX_SUB_WINDOWS || windowMs % subWindows !== 0) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `slidingWindowCounter.subWindows must be a whole number from 1 to ${MAX_SUB_WINDOWS} that divides windowMs (${windowMs}) exactly, got ${subWindows}`,
      'slidingWindowCounter.subWindows',
    );
  }
  return new SubWindowCounter(limit, windowMs, subWindows);
}
