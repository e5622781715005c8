/**
 * One RLQS stream's writing side: responses go out as the client reads them, and while it does not
 * (a full HTTP/2 window), the latest action per bucket waits in a map, so a client that never
 * reads costs at most one pending action per bucket, and stalls nobody else.
 */
import type { QuotaRule } from './spec.js';
import type { BucketId } from './buckets.js';
import type { Allowance } from './fair-share.js';
import { encodeResponse } from './wire.js';

/** Writable is the part of a gRPC server stream a session writes to (its messages are encoded responses). */
export interface Writable {
  write(message: Buffer): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/** EncodedAction is one bucket's action as bytes of a `BucketAction`, with the bucket's key (one pending action per key). */
export interface EncodedAction {
  readonly key: string;
  readonly bytes: Buffer;
}

/** TrackedBucket is a bucket a stream reports, with what the server keeps of it for that stream. */
export interface TrackedBucket {
  readonly key: string;
  readonly bucket: BucketId;
  /** The bucket's `BucketId` as the client encoded it (a copy), carried back in every action. */
  readonly bucketIdBytes: Uint8Array;
  rule: QuotaRule;
  /** The config generation the rule was matched in. */
  generation: number;
  /** The client's demand in requests per period, undefined before its first report is counted. */
  demand: number | undefined;
  /** When the client last reported a request in it. */
  lastActiveMs: number;
  /** The last grant sent, so that a push sends only a change. */
  lastGranted: number | undefined;
  /** When `lastGranted` was sent (the service's clock), so that a ledger that lost its records learns what the client still holds. */
  sentAtMs: number;
  /** What the assignments sent since the client's last report let it allow (undefined: none sent), to check its next report against. */
  allowance: Allowance | undefined;
  /** The assignment of `lastGranted` under `rule`, encoded: answers that grant the same send it again without encoding it. */
  answer: EncodedAction | undefined;
}

/** QuotaSession is one stream: its client id, domain, buckets, and its writer. */
export class QuotaSession {
  domain: string | undefined;
  readonly buckets = new Map<string, TrackedBucket>();
  /** The buckets by their ids' bytes as the client encodes them (as latin1 text), so a bucket reported again is found without reading its id. */
  private readonly byIdBytes = new Map<string, TrackedBucket>();
  closed = false;
  private blocked = false;
  private readonly pending = new Map<string, EncodedAction>();

  /** Creates a session for stream `call`, known to the ledger as `id`. */
  constructor(
    readonly id: string,
    private readonly call: Writable,
  ) {}

  /** bucketOfIdBytes returns the bucket whose id the client encodes as `bytes`, or undefined when not seen (or forgotten). */
  bucketOfIdBytes(bytes: Uint8Array): TrackedBucket | undefined {
    return this.byIdBytes.size === 0 ? undefined : this.byIdBytes.get(textOf(bytes));
  }

  /**
   * keepIdBytes remembers that the client encodes `tracked`'s id as `bytes`. A client may encode one
   * id in several ways (keys in another order); past two encodings per bucket on average, further
   * ones are not kept, and are read at each report.
   */
  keepIdBytes(bytes: Uint8Array, tracked: TrackedBucket): void {
    if (this.byIdBytes.size < 2 * this.buckets.size + 8) this.byIdBytes.set(textOf(bytes), tracked);
  }

  /** drop forgets bucket `key`. */
  drop(key: string): void {
    const tracked = this.buckets.get(key);
    if (tracked === undefined) return;
    this.buckets.delete(key);
    for (const [text, t] of this.byIdBytes) if (t === tracked) this.byIdBytes.delete(text);
  }

  /** pendingCount returns how many actions wait for the client to read. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * send writes `actions` as one response, or, while the client is not reading, keeps the latest
   * action of each bucket for when it does. Returns the number of actions waiting afterwards.
   */
  send(actions: readonly EncodedAction[]): number {
    if (this.closed || actions.length === 0) return this.pending.size;
    if (this.blocked) {
      for (const a of actions) this.pending.set(a.key, a);
      return this.pending.size;
    }
    if (!this.call.write(encodeResponse(actions.map((a) => a.bytes)))) {
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

function textOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
}
