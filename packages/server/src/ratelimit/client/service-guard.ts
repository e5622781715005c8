/**
 * How `RemoteStore` and `RateLimitClient` call a decision service without ever making a request
 * wait on a sick one: the library's {@link StoreTimeout} (adaptive by default, as every store's),
 * one {@link DeadlineQueue} for every call in flight, and a {@link CircuitBreaker} on failures in
 * a row whose opening cuts off the calls still waiting.
 */
import {
  CircuitBreaker,
  DeadlineQueue,
  FloodgateError,
  StoreTimeout,
  monotonicClock,
  systemTimers,
  watch,
  type CircuitBreakerCall,
  type Clock,
  type StoreTimeoutOption,
  type Timers,
} from 'floodgate';

/** ServiceGuardOptions are a client's failure options, as its user gives them. */
export interface ServiceGuardOptions {
  /**
   * How long a call may take before it fails with `STORE_TIMEOUT`: a fixed number of ms, or (the
   * default) adaptive, 3 × the p99 of the service's recent answers between 25 and 250 ms.
   */
  readonly timeoutMs?: StoreTimeoutOption;
  /** Failures in a row (errors, timeouts) after which nothing is sent until a probe succeeds (default 3). */
  readonly failuresToOpen?: number;
  /** How long after the circuit opens (or a probe fails) one call is sent as a probe, in ms (default 250). */
  readonly probeIntervalMs?: number;
  /** Where deadlines and the circuit read time (default a monotonic clock; a `ManualClock` in tests, given as `timers` too). */
  readonly clock?: Clock;
  /** Where the one deadline timer is set (default the system's). */
  readonly timers?: Timers;
}

/** GuardSeams name the client in its errors, and hear its circuit. */
export interface GuardSeams {
  /** The client's name, as its options are named in errors: `RemoteStore`, `RateLimitClient`. */
  readonly where: string;
  /** The service, as errors name it: its origin. */
  readonly service: string;
  /** Hears each change of the circuit's state. */
  readonly changed?: (state: 'closed' | 'open' | 'half-open', atMs: number) => void;
}

/** Send makes one call; `signal` aborts it once its deadline passes or its circuit opens. */
export type Send<T> = (signal: AbortSignal) => Promise<T>;

/** Errors that say the service could not decide; input errors (`INVALID_*`) say it is well. */
const UNHEALTHY = new Set(['STORE_TIMEOUT', 'STORE_ERROR', 'STORE_REPLY']);

/**
 * ServiceGuard runs each call to a decision service under a deadline and a circuit. A call is
 * cut off (`STORE_TIMEOUT`, and its HTTP request or gRPC call aborted) at the guard's timeout;
 * after `failuresToOpen` failures in a row the circuit opens, the calls still in flight are cut off
 * at once, and every call fails at once (`STORE_ERROR`, nothing sent) until, every
 * `probeIntervalMs`, one call goes as a probe: its answer closes the circuit. So a hung service
 * costs its callers at most one timeout each while the first failures come in, then nothing.
 * Answers in time teach the adaptive timeout the service's latency; a call cut off teaches it
 * nothing, so a hung service never talks the timeout up.
 *
 * @example
 * const guard = new ServiceGuard({ timeoutMs: { capMs: 100 } }, { where: 'MyClient', service: 'http://127.0.0.1:8080' });
 * const answer = await guard.run((signal) => pool.request({ path: '/json', method: 'POST', body, signal }));
 */
export class ServiceGuard {
  private readonly timeout: StoreTimeout;
  private readonly breaker: CircuitBreaker;
  private readonly inFlight: DeadlineQueue;
  private readonly clock: Clock;
  private readonly failuresToOpen: number;

  /** Creates a closed guard; throws `INVALID_OPTION` naming a bad option (`RemoteStore.timeoutMs`). */
  constructor(
    options: ServiceGuardOptions,
    private readonly seams: GuardSeams,
  ) {
    const { where, changed } = seams;
    this.clock = options.clock ?? monotonicClock;
    this.timeout = StoreTimeout.of(options.timeoutMs, `${where}.timeoutMs`);
    this.failuresToOpen = wholeAbove0(options.failuresToOpen ?? 3, `${where}.failuresToOpen`);
    const probeIntervalMs = options.probeIntervalMs ?? 250;
    if (typeof probeIntervalMs !== 'number' || !Number.isFinite(probeIntervalMs) || !(probeIntervalMs > 0)) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `${where}.probeIntervalMs must be a finite number of ms above 0, got ${String(probeIntervalMs)}`,
        `${where}.probeIntervalMs`,
      );
    }
    this.breaker = new CircuitBreaker({
      trigger: { type: 'consecutiveFailures', count: this.failuresToOpen },
      openMs: probeIntervalMs,
      halfOpenProbes: 1,
      probeTimeoutMs: this.timeout.maxMs,
      clock: this.clock,
      name: seams.service,
      ...(changed === undefined ? {} : { onStateChange: (e) => changed(e.to, e.atMs) }),
    });
    this.inFlight = new DeadlineQueue(this.clock, options.timers ?? systemTimers);
  }

  /** state is the circuit's state now: `closed`, `open` (nothing sent) or `half-open` (the probe is out). */
  get state(): 'closed' | 'open' | 'half-open' {
    return this.breaker.state;
  }

  /**
   * run resolves as `send`'s call does, or rejects with `STORE_TIMEOUT` once its deadline passes
   * (or the circuit opens while it waits), aborting it; it rejects at once with `STORE_ERROR`,
   * sending nothing, while the circuit is open.
   */
  run<T>(send: Send<T>): Promise<T> {
    const call = this.breaker.tryAcquire();
    if (call === undefined) return Promise.reject(this.openError());
    const abort = new AbortController();
    const { where, service } = this.seams;
    const timedOut = (): Error => {
      abort.abort();
      return new FloodgateError(
        'STORE_TIMEOUT',
        `${where}: ${service} did not answer within ${this.timeout.describe()} (${where}.timeoutMs), or its circuit opened meanwhile`,
        `${where}.timeoutMs`,
      );
    };
    let sent: Promise<T>;
    try {
      sent = send(abort.signal);
    } catch (error) {
      sent = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return watch(this.inFlight, this.clock, sent, this.timeout.ms, timedOut, undefined, this).then(
      (value) => {
        this.timeout.record(this.clock.now() - call.startedMs);
        call.succeeded();
        return value;
      },
      (error: unknown) => {
        if (error instanceof FloodgateError && !UNHEALTHY.has(error.code)) call.succeeded();
        else this.failed(call);
        throw error;
      },
    );
  }

  /** Records a failure; when it opens the circuit, the calls still in flight are cut off now. */
  private failed(call: CircuitBreakerCall): void {
    const wasClosed = this.breaker.state === 'closed';
    call.failed();
    if (wasClosed && this.breaker.state !== 'closed') this.inFlight.abandon(this);
  }

  private openError(): FloodgateError {
    const { where, service } = this.seams;
    return new FloodgateError(
      'STORE_ERROR',
      `${where}: not sent: ${service} failed ${this.failuresToOpen} times in a row, so its circuit is open; one call goes as a probe in ${this.breaker.retryInMs()} ms`,
    );
  }
}

function wholeAbove0(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new FloodgateError(
      'INVALID_OPTION',
      `${option} must be a whole number of at least 1, got ${String(value)}`,
      option,
    );
  return value;
}
