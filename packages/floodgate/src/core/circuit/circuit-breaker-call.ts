/** The handle of one call let through by a circuit breaker, ended exactly once. */

/**
 * CircuitBreakerCall is one call let through by `CircuitBreaker.tryAcquire`: end it once
 * with `succeeded`, `failed` or `abandon`. Each returns true the first time and does nothing
 * but return false after, so a `finally` may end a call already ended.
 */
export interface CircuitBreakerCall {
  /** True when the call is a probe of a half-open circuit. */
  readonly probe: boolean;
  /** When the call was let through, in the breaker's clock's ms. */
  readonly startedMs: number;
  /** succeeded records a success that took from `startedMs` until now (slow past a `slowCallRatio`'s `slowCallMs`). */
  succeeded(): boolean;
  /** failed records a failure. */
  failed(): boolean;
  /** abandon records nothing: the call said nothing of the resource's health (a probe frees its place for another). */
  abandon(): boolean;
}

/** How a {@link CircuitBreakerCall} ended. */
export type CallEnding = 'succeeded' | 'failed' | 'abandon';

/** AdmittedCall is the {@link CircuitBreakerCall} of `CircuitBreaker.tryAcquire`: it hands its one ending to `end`. */
export class AdmittedCall implements CircuitBreakerCall {
  private ended = false;

  constructor(
    readonly probeId: number | undefined,
    readonly startedMs: number,
    private readonly end: (call: AdmittedCall, ending: CallEnding) => void,
  ) {}

  get probe(): boolean {
    return this.probeId !== undefined;
  }

  succeeded(): boolean {
    return this.endAs('succeeded');
  }

  failed(): boolean {
    return this.endAs('failed');
  }

  abandon(): boolean {
    return this.endAs('abandon');
  }

  private endAs(ending: CallEnding): boolean {
    if (this.ended) return false;
    this.ended = true;
    this.end(this, ending);
    return true;
  }
}
