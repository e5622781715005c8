import type { Algorithm } from './core/algorithm.js';
import { systemClock, type Clock } from './core/clock.js';
import { FloodgateError, describeValue } from './core/errors.js';
import type { Observer } from './core/events.js';
import { isTimers, systemTimers, type Timers } from './core/timers.js';
import { requireObject } from './core/validate.js';
import { StoreTimeout, type StoreTimeoutOption } from './core/store-timeout.js';
import { GuardedTable, type FailurePolicy } from './stores/guarded-table.js';
import { MemoryStore } from './stores/memory-store.js';
import type { PolicyStore, Store } from './stores/store.js';
import { checkQueueBound } from './waiting/validate.js';

/** LimiterOptions configures a {@link Limiter}. */
export interface LimiterOptions {
  /** The policy every key is held to, e.g. `tokenBucket({ capacity: 10, refillPerSecond: 5 })`. */
  policy: Algorithm;
  /** Where key state lives (default: a new {@link MemoryStore}). */
  store?: Store;
  /** Source of the current time (default {@link systemClock}); stores with their own clock ignore it. */
  clock?: Clock;
  /**
   * Timers that {@link Limiter.acquire} waits on and that cut off a store call at `timeoutMs`:
   * default the `clock` itself when it is also {@link Timers} (a {@link ManualClock} is), else
   * {@link systemTimers}. There is at most one timer per key with waiters, one for all pending
   * store calls, and none while nothing waits.
   */
  timers?: Timers;
  /**
   * Most {@link Limiter.acquire} calls that may wait on one key at once (default Infinity); one
   * more is refused at once with `QUEUE_FULL`. 0 means no call waits: each passes now or is refused.
   */
  maxQueue?: number;
  /**
   * What an asynchronous store's failure answers (default `'fail-open'`, as Envoy's and Spring
   * Cloud Gateway's limiters do: an outage of the limiter's store does not take the service down).
   * `'fail-open'` admits with reason `fail-open`; `'fail-closed'` refuses with reason `fail-closed`
   * and `retryAfterMs` 1000; `'throw'` rejects with a typed `STORE_ERROR` or `STORE_TIMEOUT`. A
   * store that decides failures itself (`RedisStore`: set `onError` there, or use
   * `store.withOnError(...)`) refuses this option, so that no failure is decided twice.
   * Synchronous stores (memory) do not fail, and ignore it.
   */
  onError?: FailurePolicy;
  /**
   * Longest an asynchronous store's call may take before `onError` answers it as a `STORE_TIMEOUT`:
   * by default adaptive, 3 × the p99 of the store's recent answers between 25 and 250 ms (see
   * `AdaptiveTimeoutOptions`), or a fixed number of ms (Infinity for no deadline). Like
   * `onError`, refused with a store that has its own deadline (`RedisStore.timeoutMs`).
   */
  timeoutMs?: StoreTimeoutOption;
  /** The name decision and queue events carry (default the policy's name, e.g. `token-bucket`). */
  name?: string;
  /** Receives a `decision` event per decision and `queue` events from `acquire`'s lines; nothing is built when absent. */
  observer?: Observer;
  /** Whether events carry the key (default false: keys may be personal data, and make metrics unbounded). */
  reportKeys?: boolean;
}

/** LimiterParts are a Limiter's checked options and bound table. */
export interface LimiterParts {
  readonly policy: Algorithm;
  readonly store: Store;
  readonly table: PolicyStore;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly maxQueue: number;
  readonly name: string;
  readonly observer: Observer | undefined;
  readonly reportKeys: boolean;
}

/** limiterParts checks `options` and binds the policy to the store, with a deadline and failure policy when the store needs them. */
export function limiterParts(options: LimiterOptions): LimiterParts {
  const o = requireObject<LimiterOptions>(options, 'Limiter');
  if (typeof o.policy !== 'object' || o.policy === null || typeof o.policy.consume !== 'function') {
    throw new FloodgateError(
      'INVALID_OPTION',
      'Limiter.policy must be an algorithm, e.g. tokenBucket({ capacity: 10, refillPerSecond: 5 })',
      'Limiter.policy',
    );
  }
  if (o.timers !== undefined && !isTimers(o.timers)) {
    throw new FloodgateError(
      'INVALID_OPTION',
      'Limiter.timers must have setTimer and clearTimer, like systemTimers or a ManualClock',
      'Limiter.timers',
    );
  }
  const clock = o.clock ?? systemClock;
  const timers = o.timers ?? (isTimers(clock) ? clock : systemTimers);
  const name = o.name ?? o.policy.name;
  if (typeof name !== 'string' || name === '')
    throw new FloodgateError(
      'INVALID_OPTION',
      `Limiter.name must be a non-empty string, got ${describeValue(name)}`,
      'Limiter.name',
    );
  const observer = checkObserver(o.observer);
  const reportKeys = o.reportKeys ?? false;
  if (typeof reportKeys !== 'boolean')
    throw new FloodgateError(
      'INVALID_OPTION',
      `Limiter.reportKeys must be true or false, got ${describeValue(reportKeys)}`,
      'Limiter.reportKeys',
    );
  const onError = checkFailurePolicy(o.onError);
  const timeout = StoreTimeout.of(o.timeoutMs, 'Limiter.timeoutMs');
  const maxQueue = checkQueueBound(o.maxQueue, 'Limiter.maxQueue', Infinity);
  const store: Store = o.store ?? new MemoryStore();
  const bound: PolicyStore = store.bind(o.policy);
  let table: PolicyStore = bound;
  if (bound.decidesFailures === true && (o.onError !== undefined || o.timeoutMs !== undefined)) {
    store.release?.(o.policy);
    const what = o.onError !== undefined ? 'onError' : 'timeoutMs';
    throw new FloodgateError(
      'INVALID_OPTION',
      `Limiter.${what}: this store decides failures itself; set ${what} on the store (RedisStore: new RedisStore({ ${what} }) or store.withOnError(...))`,
      `Limiter.${what}`,
    );
  }
  if (!bound.synchronous && bound.decidesFailures !== true) {
    const storeName = (store as { name?: unknown }).name;
    table = new GuardedTable(bound, {
      onError,
      timeout,
      limit: o.policy.limit,
      clock,
      timers,
      observer,
      storeName: typeof storeName === 'string' ? storeName : 'custom',
    });
  }
  return { policy: o.policy, store, table, clock, timers, maxQueue, name, observer, reportKeys };
}

function checkFailurePolicy(value: unknown): FailurePolicy {
  if (value === undefined) return 'fail-open';
  if (value === 'fail-open' || value === 'fail-closed' || value === 'throw') return value;
  throw new FloodgateError(
    'INVALID_OPTION',
    `Limiter.onError must be 'fail-open', 'fail-closed' or 'throw', got ${describeValue(value)}`,
    'Limiter.onError',
  );
}

function checkObserver(value: unknown): Observer | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `Limiter.observer must be an object of hooks ({ decision, queue, ... }), got ${describeValue(value)}`,
      'Limiter.observer',
    );
  }
  return value as Observer;
}
