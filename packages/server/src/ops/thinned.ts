/**
 * A log line that may come many times a second (a reconnection failing, a client sending garbage),
 * written at most once per quiet period with the count of those it stands for.
 */

/**
 * Thinned decides which of a repeated event's occurrences get a log line: the first, then the
 * first after each `quietMs`; {@link Thinned.hit} returns how many were left out since the last
 * line written, or undefined when this one is left out too.
 *
 * @example
 * const errors = new Thinned(10_000, () => performance.now());
 * const alsoSince = errors.hit();
 * if (alsoSince !== undefined) log.warn({ alsoSince }, 'store connection error');
 */
export class Thinned {
  private lastLineMs = -Infinity;
  private leftOut = 0;

  constructor(
    private readonly quietMs: number,
    private readonly now: () => number,
  ) {}

  /** hit counts one occurrence: the number left out since the last line when this one gets a line, else undefined. */
  hit(): number | undefined {
    const nowMs = this.now();
    if (nowMs - this.lastLineMs < this.quietMs) {
      this.leftOut++;
      return undefined;
    }
    const leftOut = this.leftOut;
    this.lastLineMs = nowMs;
    this.leftOut = 0;
    return leftOut;
  }
}
