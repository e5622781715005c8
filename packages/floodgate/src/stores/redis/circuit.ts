import { monotonicClock, type Clock } from '../../core/clock.js';
import {
  CircuitBreaker,
  type CircuitBreakerAdmission,
  type CircuitBreakerState,
} from '../../core/circuit/circuit-breaker.js';

/** CircuitState is what a {@link Circuit} does now: send everything, refuse, or wait on its one probe. */
export type CircuitState = CircuitBreakerState;

/** CircuitOptions configures a {@link Circuit}. */
export interface CircuitOptions {
  /** Consecutive failures (errors or timeouts) that open the circuit; at least 1. */
  readonly failuresToOpen: number;
  /** How long an open circuit waits before letting one operation through as a probe, in ms. */
  readonly probeIntervalMs: number;
  /**
   * The longest a probe can take before it counts as failed (the store's `timeoutMs`), in ms.
   * Absent or 0, the circuit never times a probe out itself: its caller must end every probe.
   */
  readonly probeTimeoutMs?: number;
  /** Where "now" comes from: the store's clock (default {@link monotonicClock}; a `ManualClock` in tests). */
  readonly clock?: Clock;
  /** changed, when given, hears each change of state of every circuit made with these options. */
  readonly changed?: (circuit: Circuit, state: CircuitState) => void;
}

/** Admission is what {@link Circuit.admit} allows: send, send as the one probe, or do not send. */
export type Admission = CircuitBreakerAdmission;

/**
 * CircuitRouter picks the {@link Circuit} that guards a script from the script's keys: a lone
 * {@link Circuit} guards every script (a single Redis), `NodeCircuits` one per cluster node.
 */
export interface CircuitRouter {
  /** circuitOf returns the circuit guarding a script on `keys` (on a cluster, all in one hash slot). */
  circuitOf(keys: readonly string[]): Circuit;
  /** retryInMs returns how long until the circuit guarding `redisKey` may send again, in whole ms (0 when closed or due). */
  retryInMs(redisKey: string): number;
}

/**
 * Circuit is a circuit breaker in front of Redis (or, on a cluster, one node of it: see
 * `NodeCircuits`), shared by every table of one store, so a Redis that is down or hung is
 * not sent an ever-growing queue of commands. It is a {@link CircuitBreaker} with the
 * `consecutiveFailures` trigger, one probe at a time, and the store's words for its options.
 *
 * Closed (healthy), everything is sent. After `failuresToOpen` failures in a row it opens: nothing
 * is sent, and every operation fails at once. Once `probeIntervalMs` has passed, the next operation
 * is sent as the single probe (half open): its success closes the circuit, its failure (or its
 * outliving `probeTimeoutMs`) opens it for another interval. Any answer from Redis, even to an
 * operation sent before the circuit opened, closes it; any failure while open restarts the
 * interval. So while Redis is away, at most one command per interval (plus those already in
 * flight) is outstanding, and decisions recover within about `probeIntervalMs` plus one round trip
 * of Redis coming back (and of the client reconnecting, which is the client's own setting).
 *
 * All time comes from the injected clock: a test moves a `ManualClock` through every state.
 */
export class Circuit implements CircuitRouter {
  private readonly breaker: CircuitBreaker;

  /**
   * Creates a closed circuit; `name` is what it guards, as error messages say it: `'Redis'`
   * (default), `'Redis node 10.0.0.7:6379'`, or `'Redis for slots 0-1023 (node unknown)'`; `node`
   * is what circuit events name: the node's id, a slot range, or undefined for a single Redis.
   */
  constructor(
    options: CircuitOptions,
    readonly name = 'Redis',
    readonly node: string | undefined = undefined,
  ) {
    const { changed, probeTimeoutMs } = options;
    this.breaker = new CircuitBreaker({
      trigger: { type: 'consecutiveFailures', count: options.failuresToOpen },
      openMs: options.probeIntervalMs,
      halfOpenProbes: 1,
      probeTimeoutMs: probeTimeoutMs === undefined || probeTimeoutMs === 0 ? Infinity : probeTimeoutMs,
      clock: options.clock ?? monotonicClock,
      name,
      ...(changed === undefined ? {} : { onStateChange: (event) => changed(this, event.to) }),
    });
  }

  /** open is true while operations are refused without being sent (including during the probe). */
  get open(): boolean {
    return this.breaker.state !== 'closed';
  }

  /** state returns `closed`, `open` (nothing sent), or `half-open` (the one probe is out). */
  get state(): CircuitState {
    return this.breaker.state;
  }

  /**
   * retryInMs returns how long until an operation may be sent again, in whole ms (0 when closed or
   * due). While the probe is out, that is when the probe would time out plus one more interval:
   * the soonest time at which the circuit can be sending, if the probe fails.
   */
  retryInMs(): number {
    return this.breaker.retryInMs();
  }

  /**
   * idle is true when forgetting this circuit for a fresh one would change at most one send: no
   * probe is in flight and nothing is refused now (it is closed, or its next probe is due).
   */
  get idle(): boolean {
    return this.breaker.idle;
  }

  /** circuitOf returns this circuit: alone, it guards every script (a single Redis). */
  circuitOf(): Circuit {
    return this;
  }

  /** admit returns whether an operation may be sent now, and whether it is the probe. */
  admit(): Admission {
    return this.breaker.admit();
  }

  /** succeeded records an answer from Redis: any answer closes the circuit. */
  succeeded(probe: boolean): void {
    this.breaker.record({ ok: true, probe });
  }

  /** failed records a failure that says Redis is unhealthy (not a script's own error). */
  failed(probe: boolean): void {
    this.breaker.record({ ok: false, probe });
  }

  /** abandoned releases the probe slot when a probe ended without saying anything about Redis: the next operation may be the probe. */
  abandoned(probe: boolean): void {
    this.breaker.abandoned(probe);
  }
}
