/**
 * TierDemand: how many slots each priority tier of a concurrency limit needs, by Little's law
 * (its arrival rate × the calls' latency), so that the room held back for a tier follows its
 * demand instead of a fixed share.
 */

/** How long each measure of the arrival rates lasts, in ms. */
const WINDOW_MS = 100;
/** Weight of a closed window against what was known (an EWMA over about half a second). */
const WEIGHT = 0.3;

/**
 * TierDemand counts each tier's arrivals (admitted or shed alike: demand, not what was served) in
 * windows of 100 ms and keeps an exponentially weighted rate per tier, and an exponentially
 * weighted latency of the answered calls. `slotsAbove(t)` is then what the tiers more important
 * than `t` need in flight. It reads no clock: each call passes the time.
 */
export class TierDemand {
  private readonly counts: Float64Array;
  /** Calls per ms, per tier. */
  private readonly rates: Float64Array;
  private windowStartMs = NaN;
  private latencyMs = NaN;

  constructor(tiers: number) {
    this.counts = new Float64Array(tiers);
    this.rates = new Float64Array(tiers);
  }

  /** arrived records a call of `tier` asking for a slot at `nowMs`. */
  arrived(nowMs: number, tier: number): void {
    this.roll(nowMs);
    this.counts[tier]!++;
  }

  /** answered records the latency of a call that held a slot, in ms. */
  answered(latencyMs: number): void {
    if (!(latencyMs >= 0)) return;
    this.latencyMs = Number.isNaN(this.latencyMs) ? latencyMs : this.latencyMs + 0.1 * (latencyMs - this.latencyMs);
  }

  /**
   * slotsAbove returns the slots the tiers more important than `tier` need now (0 before any
   * latency is known): their mean calls in flight, plus two standard deviations of a Poisson
   * arrival count around it, so that their bursts find room as well as their average.
   */
  slotsAbove(tier: number): number {
    if (Number.isNaN(this.latencyMs)) return 0;
    let rate = 0;
    for (let t = 0; t < tier; t++) rate += this.rates[t]!;
    const mean = rate * this.latencyMs;
    return mean + 2 * Math.sqrt(mean);
  }

  /** Closes the windows that ended by `nowMs` into the rates. */
  private roll(nowMs: number): void {
    if (Number.isNaN(this.windowStartMs)) this.windowStartMs = nowMs;
    const elapsedMs = nowMs - this.windowStartMs;
    if (elapsedMs < WINDOW_MS) return;
    // A span of several windows (a quiet spell in it) weighs in as that many windows, each at the
    // span's average rate: its quiet part is in the average once, not decayed again.
    const weight = 1 - (1 - WEIGHT) ** Math.min(50, Math.floor(elapsedMs / WINDOW_MS));
    for (let t = 0; t < this.rates.length; t++) {
      this.rates[t]! += weight * (this.counts[t]! / elapsedMs - this.rates[t]!);
      this.counts[t] = 0;
    }
    this.windowStartMs = nowMs;
  }
}
