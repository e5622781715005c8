import { notify } from '../core/events.js';
import { clockMicros, SmoothRateLimiter } from '../core/smooth/smooth-rate-limiter.js';
import type { SmoothSettings } from './redis-smooth-options.js';
import { isTry, type SmoothCall } from './smooth-call.js';

/**
 * SmoothFailure applies a {@link RedisSmoothLimiter}'s `onError` to a reservation that Redis failed
 * (an error, no answer within the store's timeout, or the circuit open). Under the local fallback,
 * this process runs its own smooth limiter of the same model at its share of the fleet's rate,
 * kept from one outage to the next (like the store's fallback), and made again only when the share
 * or the rate it last heard from Redis changed. It reports each failure to the store's observer
 * (`storeError`, with the policy applied) and each switch to and from the local limiter (`fallback`).
 */
export class SmoothFailure {
  private local: SmoothRateLimiter | undefined;
  private localRate = NaN;
  /** True from a local decision until Redis answers again. */
  private active = false;

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
    this.report(error);
    if (onError === 'throw') throw error;
    if (onError === 'fail-open') return 0;
    if (onError === 'fail-closed') {
      if (isTry(call)) return false;
      throw error;
    }
    const local = this.localLimiter();
    if (!this.active) {
      this.active = true;
      this.switched(true);
    }
    const nowMicros = clockMicros(this.s.clock);
    if (call.timeoutMicros === undefined) return local.reserveAt(call.permits, nowMicros);
    return local.tryReserveAt(call.permits, Number(call.timeoutMicros), nowMicros);
  }

  /** recovered says Redis answered again: the local limiter (kept for the next outage) stops deciding. */
  recovered(): void {
    if (!this.active) return;
    this.active = false;
    this.switched(false);
  }

  /** rejected reports an error the caller sees whatever the policy (a failed setRate or getRate, the script's own refusal). */
  rejected(error: Error): void {
    this.report(error, 'throw');
  }

  private report(error: Error, onError = this.s.onError): void {
    const observer = this.s.observer;
    if (observer?.storeError === undefined) return;
    const policy = typeof onError === 'object' ? 'fallback' : onError;
    notify(observer, 'storeError', { store: 'redis', error, policy, atMs: this.s.clock.now() });
  }

  private switched(active: boolean): void {
    const observer = this.s.observer;
    if (observer !== undefined) notify(observer, 'fallback', { store: 'redis', active, atMs: this.s.clock.now() });
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
