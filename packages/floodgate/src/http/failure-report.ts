/**
 * What the HTTP gate tells the operator when deciding fails: each store outage logged once (not
 * per request), each failing option function logged once, and store errors that reach the gate
 * handed to the observer.
 */
import type { Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { FloodgateError } from '../core/errors.js';
import { notify, type Observer } from '../core/events.js';
import type { Logger } from './logger.js';
import { OptionFunctionError } from './option-error.js';

/** StoreErrorPolicy is how the gate answers a store error that reaches it (see `HttpLimitOptions.onStoreError`). */
export type StoreErrorPolicy = 'fail-open' | 'fail-closed' | 'throw';

/** The codes of a store's backend failing, as opposed to a fault in the request or the options. */
const STORE_CODES: ReadonlySet<string> = new Set(['STORE_ERROR', 'STORE_TIMEOUT', 'STORE_REPLY']);

/**
 * isStoreFailure tells whether `err`, thrown by a limiter, is its store failing: a `STORE_*`
 * {@link FloodgateError}, or anything not a FloodgateError (a custom store's own error). Other
 * FloodgateErrors (`INVALID_KEY`, `INVALID_COST`, ...) and {@link OptionFunctionError}s are faults
 * of the application, not of the store.
 */
export function isStoreFailure(err: unknown): boolean {
  if (err instanceof OptionFunctionError) return false;
  return !(err instanceof FloodgateError) || STORE_CODES.has(err.code);
}

/** isDegraded tells whether a store's failure policy, not the limit, made `decision`. */
export function isDegraded(decision: Decision): boolean {
  const r = decision.reason;
  return r === 'fail-open' || r === 'fail-closed' || r === 'fallback';
}

/** FailureReportOptions are what a {@link FailureReport} writes to. */
export interface FailureReportOptions {
  readonly logger: Logger;
  readonly observer: Observer | undefined;
  readonly clock: Clock;
}

/**
 * FailureReport logs a store outage once per dimension, when it begins (a store error, or a
 * decision made by a store's failure policy), and again only after a decision by that dimension's
 * limit has shown its store back;
 * logs each failing option once per gate; and passes store errors that reach the gate to the
 * observer's `storeError` hook, as `store: "http:<dimension>"` with the policy the gate applied.
 */
export class FailureReport {
  /** down is true while some dimension is failing: from its first failure until its limit decides again. */
  down = false;
  private readonly failing = new Set<string>();
  private readonly loggedOptions = new Set<string>();

  constructor(private readonly options: FailureReportOptions) {}

  /** storeFailed reports a store error that reached the gate on `dimension`, answered by `policy`. */
  storeFailed(dimension: string, err: unknown, policy: StoreErrorPolicy): void {
    const error = err instanceof Error ? err : new Error(String(err));
    notify(this.options.observer, 'storeError', {
      store: `http:${dimension}`,
      error,
      policy,
      atMs: this.options.clock.now(),
    });
    if (!this.began(dimension)) return;
    this.options.logger.warn(
      `floodgate: the store behind "${dimension}" failed; onStoreError "${policy}" answers until it decides again`,
      err,
    );
  }

  /** decided notes one decision of `dimension`: the start of an outage when a failure policy made it, the end when a limit did. */
  decided(dimension: string, decision: Decision): void {
    if (!isDegraded(decision)) {
      if (this.down && (decision.reason === 'ok' || decision.reason === 'limit') && this.failing.delete(dimension))
        this.down = this.failing.size > 0;
      return;
    }
    if (!this.began(dimension)) return;
    this.options.logger.warn(
      `floodgate: the store behind "${dimension}" is failing; its onError "${decision.reason}" decides until it answers again`,
    );
  }

  /** began marks `dimension` failing and tells whether that is news. */
  private began(dimension: string): boolean {
    if (this.failing.has(dimension)) return false;
    this.failing.add(dimension);
    this.down = true;
    return true;
  }

  /** optionThrew logs, once per option, that a hook (`onLimit`) threw; the answer stands. */
  optionThrew(option: string, err: unknown): void {
    if (this.loggedOptions.has(option)) return;
    this.loggedOptions.add(option);
    const message = err instanceof Error ? err.message : String(err);
    this.options.logger.warn(
      `floodgate: the ${option} option threw, and the request was answered as decided: ${message} (logged once)`,
      err,
    );
  }

  /** optionFailed logs an application fault (a failing option function, a bad key) once per option. */
  optionFailed(err: unknown): void {
    const what = err instanceof FloodgateError ? (err.option ?? err.code) : 'gate';
    if (this.loggedOptions.has(what)) return;
    this.loggedOptions.add(what);
    const message = err instanceof Error ? err.message : String(err);
    this.options.logger.warn(
      `floodgate: a request could not be decided and was answered 500: ${message} (logged once for ${what})`,
      err,
    );
  }
}
