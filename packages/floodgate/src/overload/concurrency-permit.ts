import { FloodgateError } from '../core/errors.js';
import type { CallOutcome } from '../core/adaptive/adaptive-limit.js';
import { disposeSymbol } from '../waiting/permit.js';

/** ShedReason says why a call was not given a slot. */
export type ShedReason =
  /** Every slot its tier may use was taken, and it would not wait. */
  | 'limit'
  /** It would have waited, but the wait line was full. */
  | 'queue-full'
  /** It waited until its deadline (or CoDel's target, in a standing queue) without a slot. */
  | 'queue-timeout'
  /** Its signal fired while it waited. */
  | 'aborted';

/** Shed is the answer to a call that gets no slot: it should be answered at once, and retried later. */
export interface Shed {
  readonly allowed: false;
  /** Why no slot was given. */
  readonly reason: ShedReason;
  /** The call's priority tier. */
  readonly tier: number;
  /** When a retry may find a slot, in ms: the service's recent latency (at least 1). */
  readonly retryAfterMs: number;
}

/** What a permit tells its limiter when released. */
export type ReleasePermit = (permit: ConcurrencyPermit, outcome: CallOutcome) => void;

/**
 * ConcurrencyPermit is one slot of a {@link ConcurrencyLimiter}, held from admission until
 * {@link release}. Releasing frees the slot and, under an adaptive limit, reports the call's
 * latency and outcome; it is `Disposable` (`using permit = ...` releases it as a success).
 */
export class ConcurrencyPermit implements Disposable {
  readonly allowed = true as const;
  private done = false;

  /**
   * Creates a permit on behalf of its limiter.
   * @internal Made by a ConcurrencyLimiter, never by hand: left out of the API reference.
   */
  constructor(
    private readonly giveBack: ReleasePermit,
    /** The call's priority tier. */
    readonly tier: number,
    /** When the slot was granted, on the limiter's clock, in ms. */
    readonly startMs: number,
    /** Calls holding a slot when this one got it, itself included. */
    readonly inFlight: number,
  ) {}

  /** released returns whether {@link release} was called. */
  get released(): boolean {
    return this.done;
  }

  /**
   * release frees the slot. `outcome` (default `success`) tells an adaptive limit what the call
   * says about the service: `success` samples its latency, `drop` (a timeout, an overload answer)
   * backs the limit off, `ignore` (a fast error, a client that left) says nothing. A second
   * release throws `PERMIT_RELEASED` and changes nothing.
   */
  release(outcome: CallOutcome = 'success'): void {
    if (this.done) {
      throw new FloodgateError(
        'PERMIT_RELEASED',
        'ConcurrencyPermit.release: this permit was released already; release each permit once (check permit.released)',
        'permit',
      );
    }
    if (outcome !== 'success' && outcome !== 'drop' && outcome !== 'ignore') {
      throw new FloodgateError(
        'INVALID_OPTION',
        `ConcurrencyPermit.release: outcome must be 'success', 'drop' or 'ignore', got ${String(outcome)}`,
        'outcome',
      );
    }
    this.done = true;
    this.giveBack(this, outcome);
  }

  /** Releases the permit as a success at the end of a `using` block, unless released already. */
  [disposeSymbol](): void {
    if (!this.done) this.release('success');
  }
}
