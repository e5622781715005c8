/**
 * floodgate: exact, fast rate limiting for Node.js.
 *
 * The core (algorithms, clock, decisions, errors) has no dependencies; stores hold state; the
 * {@link Limiter} applies one policy to many keys through a store.
 *
 * @packageDocumentation
 */
export { decide, type Algorithm } from './core/algorithm.js';
export { ManualClock, monotonicClock, systemClock, type Clock } from './core/clock.js';
export type { Decision } from './core/decision.js';
export { FloodgateError, type FloodgateErrorCode } from './core/errors.js';
export { FIXED_WINDOW, fixedWindow, type FixedWindowOptions } from './core/algorithms/fixed-window.js';
export { GCRA, gcra, type GcraOptions } from './core/algorithms/gcra.js';
export {
  MAX_SUB_WINDOWS,
  slidingWindowCounter,
  type SlidingWindowCounterOptions,
} from './core/algorithms/sliding-window-counter.js';
export {
  MAX_LOG_LIMIT,
  SLIDING_WINDOW_LOG,
  slidingWindowLog,
  type SlidingWindowLogOptions,
} from './core/algorithms/sliding-window-log.js';
export { WEIGHTED_WINDOW } from './core/algorithms/weighted-window.js';
export { SUB_WINDOW_COUNTER } from './core/algorithms/sub-window-counter.js';
export {
  LEAKY_BUCKET,
  TOKEN_BUCKET,
  leakyBucket,
  tokenBucket,
  type LeakyBucketOptions,
  type TokenBucketOptions,
} from './core/algorithms/token-bucket.js';
export { Limiter, type ConsumeOptions, type LimiterOptions } from './limiter.js';
export { consumeAll, consumeAllSync, decideAll, type LimitEntry, type LimitsDecision } from './limits.js';
export { decideOne } from './limits-one.js';
export { FAIL_CLOSED_RETRY_MS, type FailurePolicy } from './stores/guarded-table.js';
export {
  ADAPTIVE_TIMEOUT_DEFAULTS,
  StoreTimeout,
  type AdaptiveTimeoutOptions,
  type StoreTimeoutOption,
} from './core/store-timeout.js';
export { DeadlineQueue, watch, type Deadline } from './stores/deadline-queue.js';
export { MemoryStore, MemoryTable, policyIdentity, type MemoryStoreOptions } from './stores/memory-store.js';
export type { RestorableTable, UndoLog } from './stores/undo-log.js';
export type {
  MaybePromise,
  PolicyStore,
  Store,
  StoreConsumeAllResult,
  StoreRequest,
  SyncPolicyStore,
} from './stores/store.js';
export {
  SmoothRateLimiter,
  clockMicros,
  type SmoothBurstyOptions,
  type SmoothLimiterOptions,
  type SmoothWarmingUpOptions,
} from './core/smooth/smooth-rate-limiter.js';
export { timerSleep, type SleepMs } from './core/smooth/sleep.js';
export {
  FRESH_SMOOTH_STATE,
  releaseAt as releaseSmoothAt,
  setRateAt as setSmoothRateAt,
  tryReserveAt as tryReserveSmoothAt,
  type SmoothReservation,
} from './core/smooth/smooth-state.js';
export { storageOf as smoothStorageOf, type SmoothModel } from './core/smooth/smooth-model.js';
export type { PermitStorage, SmoothState } from './core/smooth/permit-storage.js';
export { systemTimers, type TimerHandle, type Timers } from './core/timers.js';
export type { AcquireOptions } from './waiting/acquire-queue.js';
export { ShapingQueue, type ShapingQueueOptions, type SubmitOptions } from './waiting/shaping-queue.js';
export { LeakyGate, type GateTicket, type LeakyGateOptions } from './waiting/leaky-gate.js';
export { Semaphore, type SemaphoreAcquireOptions, type SemaphoreOptions } from './waiting/semaphore.js';
export { Permit, type PermitState } from './waiting/permit.js';
export {
  combineObservers,
  notify,
  type CircuitEvent,
  type DecisionEvent,
  type FallbackEvent,
  type Observer,
  type ObserverHook,
  type QueueEvent,
  type StoreCallEvent,
  type StoreErrorEvent,
} from './core/events.js';
export {
  AdaptiveLimit,
  type AdaptiveLimitOptions,
  type AdaptiveLimitSnapshot,
  type CallOutcome,
} from './core/adaptive/adaptive-limit.js';
export {
  ConcurrencyLimiter,
  type Admission,
  type ConcurrencyAcquireOptions,
  type ConcurrencyLimiterOptions,
  type ConcurrencySnapshot,
} from './overload/concurrency-limiter.js';
export { ConcurrencyPermit, type Shed, type ShedReason } from './overload/concurrency-permit.js';
export type { CoDel } from './overload/wait-line.js';
export {
  CircuitBreaker,
  type CircuitBreakerAdmission,
  type CircuitBreakerCall,
  type CircuitBreakerEvent,
  type CircuitBreakerOptions,
  type CircuitBreakerOutcome,
  type CircuitBreakerReason,
  type CircuitBreakerState,
  type CircuitBreakerTrigger,
} from './core/circuit/circuit-breaker.js';
export type { CircuitBreakerTriggerType } from './core/circuit/circuit-breaker-events.js';
export {
  askLease,
  returnLease,
  CONTENDED_MULTIPLE,
  type LeaseAnswer,
  type LeaseAsk,
  type LeaseHolder,
  type LeaseReturn,
  type LeaseTerms,
} from './leases/lease-ledger.js';
export {
  leaseOverAdmission,
  leaseSettingsOf,
  leaseTermsOf,
  maxOutstandingOf,
  type LeaseOptions,
  type LeaseSettings,
} from './leases/lease-options.js';
export { MemoryLeaseSource, type LeaseSource } from './leases/lease-source.js';
export { LeasedTable, type LeaseCounts, type LeasedTableOptions } from './leases/leased-table.js';
