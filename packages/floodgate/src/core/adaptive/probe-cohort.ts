/**
 * ProbeCohort follows the calls of one probe of an {@link AdaptiveLimit}'s baseline. Once the
 * calls sent before the probe have drained below its lowered limit, the calls sent from then on
 * are its cohort, until `lengthMs` has passed and at least `minCalls` were sent; the probe ends
 * when every one of them has ended. Sampling a whole cohort is what makes the probe fair to every
 * service time: a window of the calls that merely end in time would favour the short ones, since
 * a long call sent late ends after it.
 */
export class ProbeCohort {
  /** When the calls in flight first fell below the probe's limit, in ms; NaN until then. */
  private drainedMs = NaN;
  /** When the cohort stopped taking calls, in ms; Infinity while it takes them. */
  private closedMs = Infinity;
  private sentCount = 0;
  private endedCount = 0;

  /** Creates the cohort of a probe that began at `startMs`. */
  constructor(
    private readonly startMs: number,
    private readonly lengthMs: number,
    private readonly minCalls: number,
  ) {}

  /** drained notes, at a call's end, whether the calls still in flight are now below the probe's limit. */
  drained(nowMs: number, inFlightAfter: number, limit: number): void {
    if (Number.isNaN(this.drainedMs) && inFlightAfter < limit) this.drainedMs = nowMs;
  }

  /** sent counts a call sent at `nowMs` when it belongs to the cohort, and closes the cohort once it has enough. */
  sent(nowMs: number): void {
    if (this.closedMs === Infinity && nowMs >= this.drainedMs + this.lengthMs && this.sentCount >= this.minCalls)
      this.closedMs = nowMs;
    if (this.holds(nowMs)) this.sentCount++;
  }

  /** holds returns whether a call sent at `startMs` belongs to the cohort. */
  holds(startMs: number): boolean {
    return startMs >= this.drainedMs && startMs < this.closedMs;
  }

  /**
   * complete counts one ended call of the cohort (when `member`) and returns whether the probe is
   * over at `nowMs`: the cohort is closed and every call it sent has ended; or the probe has run
   * for twenty of its lengths and a second (a quiet service, or a call that never ends, cannot
   * hold the limit down for ever).
   */
  complete(nowMs: number, member: boolean): boolean {
    if (member) this.endedCount++;
    if (nowMs - this.startMs >= 20 * this.lengthMs + 1000) return true;
    return this.closedMs !== Infinity && this.endedCount >= this.sentCount;
  }
}
