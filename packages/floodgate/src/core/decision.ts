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
  /** Why a request was refused: `limit` for the policy, `store-full` when the store could not track a new key. */
  readonly reason: 'ok' | 'limit' | 'store-full';
}

/** ceilMs rounds a non-negative duration up to whole milliseconds, tolerating float noise of 1e-9. */
export function ceilMs(ms: number): number {
  if (!(ms > 0)) return 0;
  const rounded = Math.round(ms);
  return Math.abs(ms - rounded) < 1e-9 ? rounded : Math.ceil(ms);
}

/** makeDecision returns a {@link Decision}; durations are rounded up to whole ms, remaining down. */
export function makeDecision(
  allowed: boolean,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
): Decision {
  return {
    allowed,
    limit,
    remaining: remaining > 0 ? Math.floor(remaining + 1e-9) : 0,
    retryAfterMs: allowed ? 0 : ceilMs(retryAfterMs),
    resetMs: ceilMs(resetMs),
    reason: allowed ? 'ok' : 'limit',
  };
}
