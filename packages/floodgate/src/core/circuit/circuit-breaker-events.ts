/** The states of a circuit breaker, why they change, and the event that says so. */

/** CircuitBreakerTriggerType names the kinds of trigger a `CircuitBreaker` opens on (see `CircuitBreakerTrigger`). */
export type CircuitBreakerTriggerType = 'slowCallRatio' | 'errorRatio' | 'errorCount' | 'consecutiveFailures';

/** CircuitBreakerState is what a `CircuitBreaker` does now: send every call, refuse them, or let probes through. */
export type CircuitBreakerState = 'closed' | 'open' | 'half-open';

/**
 * CircuitBreakerReason says why a `CircuitBreaker` changed state:
 *
 * - closed to open: the trigger's type (`slowCallRatio`, `errorRatio`, `errorCount`, `consecutiveFailures`);
 * - open to half-open: `probe-due` (`openMs` passed and a call was let through as a probe);
 * - half-open to closed: `probe-succeeded` (the last of `halfOpenProbes` succeeded);
 * - half-open to open: `probe-failed`, or `probe-timeout` (a probe outlived `probeTimeoutMs`);
 * - open or half-open to closed: `call-succeeded` (`consecutiveFailures` only: a call sent before
 *   the circuit opened succeeded, which breaks the streak).
 */
export type CircuitBreakerReason =
  CircuitBreakerTriggerType | 'probe-due' | 'probe-succeeded' | 'probe-failed' | 'probe-timeout' | 'call-succeeded';

/** CircuitBreakerEvent is one change of state of a `CircuitBreaker`, as `onStateChange` hears it. */
export interface CircuitBreakerEvent {
  /** The breaker's `name`. */
  readonly breaker: string;
  /** The state it left. */
  readonly from: CircuitBreakerState;
  /** The state it is in now. */
  readonly to: CircuitBreakerState;
  /** Why it changed. */
  readonly reason: CircuitBreakerReason;
  /** When the change happened, in the breaker's clock's ms (for a probe timeout: when the probe's time ran out). */
  readonly atMs: number;
}
