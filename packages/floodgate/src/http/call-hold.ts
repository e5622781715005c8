/**
 * One request's place at a concurrency limit, from its wait to the end of its response: the permit
 * is released exactly once, however the request ends.
 */
import type { ConcurrencyPermit } from '../overload/concurrency-permit.js';
import { callOutcome, type CallEnding } from './call-outcome.js';

/**
 * CallHold follows one request through a concurrency middleware. While the request waits,
 * {@link end} (the client left) aborts the wait through {@link signal}; once admitted, {@link take}
 * keeps the permit and {@link end} releases it, with the `callOutcome` of how the response
 * ended. A once-guard makes every later {@link end} a no-op: a permit is never released twice,
 * whatever order the framework's events come in (close after finish, an error after close).
 */
export class CallHold {
  /** What the handler threw, when the adapter sees it (its outcome is then `drop` or `ignore`). */
  error: unknown = undefined;
  private permit: ConcurrencyPermit | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private ended = false;

  /** signal returns a signal that aborts when the request ends before it got a permit (made on first use). */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  /** endedEarly returns whether the request ended (the client left) before a permit was taken. */
  get endedEarly(): boolean {
    return this.ended && this.permit === undefined;
  }

  /**
   * take keeps `permit` until {@link end} and returns true; when the request has ended already
   * (the client left as the permit was granted), it releases the permit as `ignore` and returns false.
   */
  take(permit: ConcurrencyPermit): boolean {
    if (this.ended) {
      permit.release('ignore');
      return false;
    }
    this.permit = permit;
    return true;
  }

  /**
   * end is told that the response closed (finished, or the connection dropped): the first call
   * releases the permit with the outcome of `ending`, or aborts the wait when no permit is held yet.
   */
  end(ending: CallEnding): void {
    if (this.ended) return;
    this.ended = true;
    const permit = this.permit;
    if (permit === undefined) this.controller?.abort();
    else permit.release(callOutcome(this.error === undefined ? ending : { ...ending, error: this.error }));
  }
}
