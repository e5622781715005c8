import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { FloodgateError, type FloodgateErrorCode } from '../core/errors.js';
import { notify, type Observer } from '../core/events.js';
import type { Timers } from '../core/timers.js';
import { DeadlineQueue, watch } from './deadline-queue.js';
import type { StoreTimeout } from '../core/store-timeout.js';
import type { MaybePromise, PolicyStore } from './store.js';

/**
 * FailurePolicy is what a limiter answers when its store fails or does not answer in time:
 * `fail-open` admits (the decision's reason says `fail-open`), `fail-closed` refuses (reason
 * `fail-closed`), `throw` rejects with the typed error (`STORE_ERROR`, `STORE_TIMEOUT`).
 */
export type FailurePolicy = 'fail-open' | 'fail-closed' | 'throw';

/** FAIL_CLOSED_RETRY_MS is the `retryAfterMs` of a fail-closed refusal: the store's health is unknown, so a second. */
export const FAIL_CLOSED_RETRY_MS = 1000;

/** GuardedTableOptions configures a {@link GuardedTable}. */
export interface GuardedTableOptions {
  readonly onError: FailurePolicy;
  /** How long a call may wait for the store: fixed (Infinity: no deadline) or adaptive; it hears every answer's latency. */
  readonly timeout: StoreTimeout;
  /** The policy's limit, reported by failure decisions. */
  readonly limit: number;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly observer: Observer | undefined;
  /** The name store error events carry. */
  readonly storeName: string;
}

/** Codes of bad input: they pass through as they are, never treated as a store failure. */
const INPUT_CODES: ReadonlySet<FloodgateErrorCode> = new Set([
  'INVALID_OPTION',
  'INVALID_COST',
  'COST_EXCEEDS_LIMIT',
  'INVALID_KEY',
  'STORE_NOT_SYNC',
]);

/**
 * GuardedTable puts a deadline and a failure policy around an asynchronous table that has neither
 * (a custom store): a call that rejects, throws or does not answer within `timeoutMs` becomes a
 * typed error (`STORE_ERROR`, `STORE_TIMEOUT`; other `STORE_*` errors keep their code), reported
 * to the observer's `storeError`, and `onError` answers. A store's late answer after its deadline
 * is dropped, and no rejection is ever left unhandled. Bad input (`INVALID_*`) is passed through.
 *
 * What each call answers on failure: `consume`, `peek` the fail-open or fail-closed decision;
 * `reserve` 0 (admit now) or -1 (refuse); `refund` nothing (the charge stays until it refills);
 * `reset` always rejects, whatever the policy, so that a reset is never silently lost.
 */
export class GuardedTable implements PolicyStore {
  readonly synchronous = false;
  readonly ownsClock: boolean | undefined;
  private readonly deadlines: DeadlineQueue;
  private readonly open: Decision;
  private readonly closed: Decision;

  constructor(
    private readonly inner: PolicyStore,
    private readonly options: GuardedTableOptions,
  ) {
    this.ownsClock = inner.ownsClock;
    this.deadlines = new DeadlineQueue(options.clock, options.timers);
    const limit = options.limit;
    this.open = Object.freeze({ allowed: true, limit, remaining: 0, retryAfterMs: 0, resetMs: 0, reason: 'fail-open' });
    this.closed = Object.freeze({
      allowed: false,
      limit,
      remaining: 0,
      retryAfterMs: FAIL_CLOSED_RETRY_MS,
      resetMs: 0,
      reason: 'fail-closed',
    });
    if (inner.reserve === undefined) this.reserve = undefined;
  }

  /** consume resolves to the store's decision, or to `onError`'s when the store fails. */
  consume(key: string, cost: number, nowMs: number): Promise<Decision> {
    return this.guard(() => this.inner.consume(key, cost, nowMs), this.decisionOnFailure);
  }

  /** peek resolves to the store's answer, or to `onError`'s when the store fails. */
  peek(key: string, cost: number, nowMs: number): Promise<Decision> {
    return this.guard(() => this.inner.peek(key, cost, nowMs), this.decisionOnFailure);
  }

  /** refund gives `cost` back; when the store fails it resolves anyway (or rejects under `throw`). */
  refund(key: string, cost: number, nowMs: number): Promise<void> {
    return this.guard(() => this.inner.refund(key, cost, nowMs), nothing);
  }

  /** reset forgets `key`; it rejects when the store fails, whatever `onError` says. */
  reset(key: string): Promise<void> {
    return this.guard(() => this.inner.reset(key), rethrow);
  }

  /** reserve books `cost` and resolves to the ms to wait; on failure 0 under fail-open, -1 under fail-closed. */
  reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): Promise<number> {
    return this.guard(() => this.inner.reserve!(key, cost, nowMs, maxWaitMs), reservationOnFailure);
  }

  private readonly decisionOnFailure = (policy: 'fail-open' | 'fail-closed'): Decision =>
    policy === 'fail-open' ? this.open : this.closed;

  /** Runs `call` under the deadline; a failure goes to {@link failed}. */
  private guard<T>(call: () => MaybePromise<T>, onFailure: (policy: 'fail-open' | 'fail-closed') => T): Promise<T> {
    let answer: MaybePromise<T>;
    try {
      answer = call();
    } catch (error) {
      return this.failed(error, onFailure);
    }
    const { timeout, clock } = this.options;
    const timeoutMs = timeout.ms;
    if (timeoutMs === Infinity)
      return Promise.resolve(answer).then(undefined, (error: unknown) => this.failed(error, onFailure));
    const startedMs = clock.now();
    return watch(this.deadlines, clock, Promise.resolve(answer), timeoutMs, () =>
      timeoutError(timeout.describe()),
    ).then(
      (value) => {
        timeout.record(clock.now() - startedMs);
        return value;
      },
      (error: unknown) => this.failed(error, onFailure),
    );
  }

  /** The answer to a failed call: bad input as it is; a store failure reported, then `onError`'s. */
  private failed<T>(error: unknown, onFailure: (policy: 'fail-open' | 'fail-closed') => T): Promise<T> {
    if (error instanceof FloodgateError && INPUT_CODES.has(error.code)) return Promise.reject(error);
    const typed = storeError(error);
    const { onError, observer } = this.options;
    if (observer !== undefined) {
      notify(observer, 'storeError', {
        store: this.options.storeName,
        error: typed,
        policy: onError,
        atMs: this.options.clock.now(),
      });
    }
    if (onError === 'throw') return Promise.reject(typed);
    try {
      return Promise.resolve(onFailure(onError));
    } catch {
      return Promise.reject(typed);
    }
  }
}

/** storeError returns `error` when it is already a typed store error, else a `STORE_ERROR` whose cause it is. */
export function storeError(error: unknown): FloodgateError {
  if (error instanceof FloodgateError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const typed = new FloodgateError('STORE_ERROR', `the limiter's store failed: ${message}`);
  typed.cause = error;
  return typed;
}

function timeoutError(timeout: string): FloodgateError {
  return new FloodgateError(
    'STORE_TIMEOUT',
    `the limiter's store did not answer within ${timeout} (Limiter.timeoutMs)`,
    'timeoutMs',
  );
}

function nothing(): void {}

/** reset's failure answer: there is none, the error stands. */
function rethrow(): never {
  throw new Error('reset failed');
}

function reservationOnFailure(policy: 'fail-open' | 'fail-closed'): number {
  return policy === 'fail-open' ? 0 : -1;
}
