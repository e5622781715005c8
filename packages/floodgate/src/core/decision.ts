/**
 * Decision is the answer to one request against one policy.
 *
 * All durations are whole milliseconds, rounded up, so that waiting `retryAfterMs` is always enough.
 */
export interface Decision {
  /** Whether the request was admitted (and, for `consume`, charged). */
  readonly allowed: boolean;
  /** The most cost the policy admits at once for a fresh key (capacity, or limit per window). */
  readonly limit: number;
  /** Whole cost units still available after this decision; never negative. */
  readonly remaining: number;
  /** 0 when allowed; otherwise how long until the same request could be admitted (Infinity: never). */
  readonly retryAfterMs: number;
  /** How long until the key is back to full (as if never used), in milliseconds. */
  readonly resetMs: number;
  /**
   * Who decided, and why: `ok` admitted by the policy; `limit` refused by the policy; `store-full`
   * refused because the store could not track a new key. When the store's backend (Redis) failed
   * or did not answer in time, the store's failure policy decided instead: `fail-open` admitted
   * without a limit, `fail-closed` refused without a limit, `fallback` decided (either way) by a
   * local in-memory limiter holding a share of the limit.
   */
  readonly reason: 'ok' | 'limit' | 'store-full' | 'fail-open' | 'fail-closed' | 'fallback';
}

/** ceilMs rounds a duration up to whole milliseconds (0 for none), ignoring float noise under 1e-9 ms. */
export function ceilMs(ms: number): number {
  return ms > 1e-9 ? Math.ceil(ms - 1e-9) : 0;
}

/** makeDecision returns a {@link Decision}; durations are rounded up to whole ms, remaining down. */
export function makeDecision(
  allowed: boolean,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
): Decision {
  if (allowed) return admitted(limit, remaining, resetMs);
  return {
    allowed,
    limit,
    remaining: wholeRemaining(remaining),
    retryAfterMs: ceilMs(retryAfterMs),
    resetMs: ceilMs(resetMs),
    reason: 'limit',
  };
}

/**
 * admitted returns the admitted {@link Decision} ({@link makeDecision} with `allowed` true). It is
 * kept apart and small so that V8 inlines it into a caller's loop with the rest of the admission.
 */
export function admitted(limit: number, remaining: number, resetMs: number): Decision {
  return {
    allowed: true,
    limit,
    remaining: wholeRemaining(remaining),
    retryAfterMs: 0,
    resetMs: ceilMs(resetMs),
    reason: 'ok',
  };
}

/** wholeRemaining rounds what remains down to whole units, ignoring float noise under 1e-9; never negative. */
function wholeRemaining(remaining: number): number {
  return remaining > 0 ? Math.floor(remaining + 1e-9) : 0;
}
