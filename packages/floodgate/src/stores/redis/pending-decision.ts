/** A decision sent to Redis and not yet answered. */
import type { Decision } from '../../core/decision.js';
import type { DecisionOp, BatchPolicy, BatchRequest } from './batcher.js';

/** DecisionOwner is the table a {@link PendingDecision} reports back to when Redis answers or fails. */
export interface DecisionOwner {
  /** answered settles `pending` with the decision Redis made. */
  answered(pending: PendingDecision, decision: Decision): void;
  /** failed settles `pending` when Redis could not decide it: the failure policy's answer, or the error. */
  failed(pending: PendingDecision, error: unknown): void;
  /** late hears the decision Redis made for `pending` after it had failed at its deadline. */
  late(pending: PendingDecision, decision: Decision): void;
}

type Resolve = (decision: Decision) => void;
type Reject = (error: unknown) => void;

let capturedResolve: Resolve | undefined;
let capturedReject: Reject | undefined;

/**
 * The one executor of every pending decision's promise. It hands the promise's resolving functions
 * out through two module variables, read at once by the constructor that made the promise, so no
 * executor closure is allocated per decision.
 */
function capture(resolve: Resolve, reject: Reject): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/**
 * PendingDecision is one consume or peek on its way to Redis: the {@link BatchRequest} the batcher
 * sends, what its owner needs once Redis answers (the caller's key, cost and time, and when it was
 * sent, for the over-limit cache), and the promise its caller holds. Everything a decision keeps
 * while in flight is this one object and its promise.
 */
export class PendingDecision implements BatchRequest {
  /** promise settles once the owner has the answer: Redis's decision, the failure policy's, or an error. */
  readonly promise: Promise<Decision>;
  /** owed is set when the failure policy admitted it while Redis was away: its cost is owed to Redis (the write-back). */
  owed = false;
  /** resolve settles {@link promise} with a decision. */
  readonly resolve: Resolve;
  /** reject settles {@link promise} with an error. */
  readonly reject: Reject;

  /** Creates a pending decision and its promise. */
  constructor(
    private readonly owner: DecisionOwner,
    readonly policy: BatchPolicy,
    readonly redisKey: string,
    readonly op: DecisionOp,
    readonly time: string,
    readonly cost: number,
    /** The caller's key, as the over-limit cache and the failure policy know it. */
    readonly key: string,
    /** The caller's time: NaN when the table owns its clock and the caller read none. */
    readonly nowMs: number,
    /** When it was sent, on the monotonic clock (0 when no over-limit cache needs it). */
    readonly sentAtMs: number,
  ) {
    this.promise = new Promise<Decision>(capture);
    this.resolve = capturedResolve!;
    this.reject = capturedReject!;
  }

  /** answered hands Redis's decision to the owner. */
  answered(decision: Decision): void {
    this.owner.answered(this, decision);
  }

  /** failed hands what stopped the decision to the owner. */
  failed(error: unknown): void {
    this.owner.failed(this, error);
  }

  /** late hands the owner Redis's decision, made after this one had failed at its deadline. */
  late(decision: Decision): void {
    this.owner.late(this, decision);
  }
}
