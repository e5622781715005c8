/**
 * One RLQS stream's writing side: responses go out as the client reads them, and while it does not
 * (a full HTTP/2 window), the latest action per bucket waits in a map, so a client that never
 * reads costs at most one pending action per bucket, and stalls nobody else.
 */
import type { BucketAction } from './actions.js';
import type { QuotaRule } from './spec.js';
import type { BucketId } from './buckets.js';

/** Writable is the part of a gRPC server stream a session writes to. */
export interface Writable {
  write(message: unknown): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/** TrackedBucket is a bucket a stream reports, with what the server keeps of it for that stream. */
export interface TrackedBucket {
  readonly bucket: BucketId;
  rule: QuotaRule;
  /** The config generation the rule was matched in. */
  generation: number;
  /** The client's demand in requests per period, undefined before its first report is counted. */
  demand: number | undefined;
  /** When the client last reported a request in it. */
  lastActiveMs: number;
  /** The last grant sent, so that a push sends only a change. */
  lastGranted: number | undefined;
}

/** QuotaSession is one stream: its client id, domain, buckets, and its writer. */
export class QuotaSession {
  domain: string | undefined;
  readonly buckets = new Map<string, TrackedBucket>();
  closed = false;
  private blocked = false;
  private readonly pending = new Map<string, BucketAction>();

  /** Creates a session for stream `call`, known to the ledger as `id`; `keyOf` names an action's bucket. */
  constructor(
    readonly id: string,
    private readonly call: Writable,
    private readonly keyOf: (action: BucketAction) => string,
  ) {}

  /** pendingCount returns how many actions wait for the client to read. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * send writes `actions` as one response, or, while the client is not reading, keeps the latest
   * action of each bucket for when it does. Returns the number of actions waiting afterwards.
   */
  send(actions: readonly BucketAction[]): number {
    if (this.closed || actions.length === 0) return this.pending.size;
    if (this.blocked) {
      for (const a of actions) this.pending.set(this.keyOf(a), a);
      return this.pending.size;
    }
    if (!this.call.write({ bucket_action: actions })) {
      this.blocked = true;
      this.call.once('drain', () => this.flush());
    }
    return this.pending.size;
  }

  private flush(): void {
    this.blocked = false;
    if (this.pending.size === 0) return;
    const actions = [...this.pending.values()];
    this.pending.clear();
    this.send(actions);
  }
}
