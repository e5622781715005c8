import type { Clock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';

interface Refusal {
  /** The smallest cost Redis refused; any cost at least this large is refused too. */
  readonly cost: number;
  /** Until when (the cache's clock, ms, exclusive) Redis is certain to refuse that cost. */
  readonly refusedUntilMs: number;
  /** When the request could pass and when the key is back to full, counted from the reply's arrival. */
  readonly retryAtMs: number;
  readonly resetAtMs: number;
  readonly limit: number;
  readonly remaining: number;
}

/**
 * OverLimitCache remembers, for one policy, keys that Redis refused, so that during a flood from
 * an over-limit key this process answers the refusal itself until the key's retry time instead of
 * asking Redis again. It only answers what Redis would: `allowed` and `reason` are exact.
 *
 * Why that is exact: every policy's refusal is monotonic in cost and in time. Redis refused `cost`
 * at its time T with `retryAfterMs` r, so no cost at least as large passes before T + r unless
 * state is given back; spending elsewhere only postpones it. The request was sent at local time
 * t0 <= T, and r is rounded up to whole ms, so the refusal is certain until t0 + r - 1 on this
 * process's (monotonic) clock, and that is when the entry ends. Redis owns the clock, but only
 * durations are compared, so clock offsets never matter; the bound is the drift of the two clocks'
 * rates over r (parts per million) and a step of the server's clock during r.
 *
 * Giving state back ends entries: a `refund` or `reset` from this process drops the key's entry
 * (before it is sent and again once it is done). A refund or reset by another process is not seen
 * here: this process may refuse that key until its entry ends, at most the refusal's retryAfterMs.
 *
 * The answer's `remaining` is the one Redis sent with the refusal (a refilling bucket may by now
 * hold more, never enough); `retryAfterMs` and `resetMs` count down from the reply's arrival, so
 * they are never shorter than Redis's own. At most `maxKeys` keys are held; expired entries and
 * then the oldest make room. Forgetting an entry only costs a round trip.
 */
export class OverLimitCache {
  private readonly entries = new Map<string, Refusal>();

  /**
   * Creates an empty cache of at most `maxKeys` keys, reading time (ms) from `clock`: a monotonic
   * one in production (only durations are compared), a `ManualClock` in tests.
   */
  constructor(
    private readonly maxKeys: number,
    private readonly clock: Clock,
  ) {}

  /** size returns how many keys are held (expired entries are dropped lazily). */
  get size(): number {
    return this.entries.size;
  }

  /** refusal returns the cached refusal of `cost` on `key`, or undefined when Redis must be asked. */
  refusal(key: string, cost: number): Decision | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || cost < entry.cost) return undefined;
    const nowMs = this.clock.now();
    if (nowMs >= entry.refusedUntilMs) {
      this.entries.delete(key);
      return undefined;
    }
    return {
      allowed: false,
      limit: entry.limit,
      remaining: entry.remaining,
      retryAfterMs: Math.max(1, Math.ceil(entry.retryAtMs - nowMs)),
      resetMs: Math.max(0, Math.ceil(entry.resetAtMs - nowMs)),
      reason: 'limit',
    };
  }

  /** remember records Redis's refusal of `cost` on `key`, for a request sent at `sentAtMs`. */
  remember(key: string, cost: number, decision: Decision, sentAtMs: number): void {
    const refusedUntilMs = sentAtMs + decision.retryAfterMs - 1;
    const nowMs = this.clock.now();
    if (decision.allowed || decision.reason !== 'limit' || refusedUntilMs <= nowMs || this.maxKeys === 0) return;
    const old = this.entries.get(key);
    if (old !== undefined && old.cost < cost && old.refusedUntilMs > nowMs) return;
    if (old === undefined && this.entries.size >= this.maxKeys) this.makeRoom(nowMs);
    this.entries.set(key, {
      cost,
      refusedUntilMs,
      retryAtMs: nowMs + decision.retryAfterMs,
      resetAtMs: nowMs + decision.resetMs,
      limit: decision.limit,
      remaining: decision.remaining,
    });
  }

  /** forget drops `key`'s entry: state was given back, so the refusal may no longer hold. */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Drops expired entries among the oldest few, else the oldest one. */
  private makeRoom(nowMs: number): void {
    let examined = 0;
    for (const [key, entry] of this.entries) {
      if (entry.refusedUntilMs <= nowMs) this.entries.delete(key);
      if (++examined >= 16) break;
    }
    if (this.entries.size < this.maxKeys) return;
    const oldest = this.entries.keys().next();
    if (oldest.done !== true) this.entries.delete(oldest.value);
  }
}
