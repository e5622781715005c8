import { clockMicros, SmoothRateLimiter } from '../core/smooth/smooth-rate-limiter.js';
import type { SmoothSettings } from './redis-smooth-options.js';
import { isTry, type SmoothCall } from './smooth-call.js';

/**
 * SmoothFailure applies a {@link RedisSmoothLimiter}'s `onError` to a reservation that Redis failed
 * (an error, no answer within the store's timeout, or the circuit open). Under the local fallback,
 * this process runs its own smooth limiter of the same model at its share of the fleet's rate,
 * kept from one outage to the next (like the store's fallback), and made again only when the share
 * or the rate it last heard from Redis changed.
 */
export class SmoothFailure {
  private local: SmoothRateLimiter | undefined;
  private localRate = NaN;

  /** Creates the policy; `rate()` is the fleet's rate as this process last heard it. */
  constructor(
    private readonly s: SmoothSettings,
    private readonly rate: () => number,
  ) {}

  /**
   * waitMicrosFor returns the wait, in µs, that the policy grants `call` after Redis failed with
   * `error`, or false when it refuses (only a tryAcquire or tryReserve is refused: `fail-closed`, or
   * a local wait past its timeout); it throws `error` under `'throw'`, and under `'fail-closed'`
   * for a call that cannot be refused.
   */
  waitMicrosFor(call: SmoothCall, error: Error): number | false {
    const onError = this.s.onError;
    if (onError === 'throw') throw error;
    if (onError === 'fail-open') return 0;
    if (onError === 'fail-closed') {
      if (isTry(call)) return false;
      throw error;
    }
    const local = this.localLimiter();
    const nowMicros = clockMicros(this.s.clock);
    if (call.timeoutMicros === undefined) return local.reserveAt(call.permits, nowMicros);
    return local.tryReserveAt(call.permits, Number(call.timeoutMicros), nowMicros);
  }

  private localLimiter(): SmoothRateLimiter {
    const rate = this.rate() * this.s.share();
    if (this.local !== undefined && rate === this.localRate) return this.local;
    this.localRate = rate;
    const { model, clock } = this.s;
    if (this.local !== undefined) {
      this.local.setRate(rate);
      return this.local;
    }
    this.local =
      model.kind === 'bursty'
        ? SmoothRateLimiter.bursty(rate, { clock, maxBurstSeconds: model.maxBurstSeconds })
        : SmoothRateLimiter.warmingUp(rate, model.warmupMicros / 1000, { clock, coldFactor: model.coldFactor });
    return this.local;
  }
}
