/**
 * The Redis ledger: every service replica on one Redis, or one Redis Cluster, shares each bucket's
 * budget. Reports are granted in batches, as the library's RedisStore batches decisions: the
 * reports of one tick of the event loop go in one script call (sent without waiting for the calls
 * already out), so a busy replica makes a call per tick rather than one per report; on a cluster,
 * one call per hash slot of the tick's buckets (`redis-calls.ts`). One call per redistribution and
 * per release (per slot on a cluster; see `redis-script.ts`); the script applies the same rules as
 * `fair-share.ts` on Redis's clock.
 *
 * What makes the replicas safe together, beside the script's atomic check of each bucket's sum:
 * - a grant a call lowers stays counted as held, for everyone else, until this ledger has
 *   settled the call (one `settle` call per slot, on the turn of the event loop after the call
 *   answered, by when the service has sent its grants) and `handoverMs` more, or until the old
 *   grant's TTL runs out if it never does: the part freed reaches no other client before its
 *   holder has been sent the lower grant;
 * - every call names the ledger's epoch (`redis-script.ts`), so a Redis that lost its records is
 *   noticed at the first call of a replica that knew them, and grants are held back for one TTL;
 * - changes are published (a join, or a share freed while a client holds nothing), so each
 *   replica redistributes its own clients' shares at once, not at their next report.
 */
import { randomBytes } from 'node:crypto';
import { hashSlotOf, type RedisAdapter } from 'floodgate/redis';
import type { LedgerEntry, LedgerEvents, QuotaLedger } from './ledger.js';
import {
  bucketKeysOf,
  grantCallsOf,
  releaseKeysOf,
  sentinelKeyOf,
  type GrantCall,
  type GrantReport,
} from './redis-calls.js';
import { QUOTA_SCRIPT } from './redis-script.js';

/** QuotaSubscriber receives what other replicas publish: a subscription on its own connection (a subscribed client can send nothing else). */
export interface QuotaSubscriber {
  /** subscribe calls `onMessage` with each message published on `channel`; resolves once subscribed. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /** close ends the subscription and its connection. */
  close(): void;
}

/** RedisQuotaLedgerOptions configures a {@link RedisQuotaLedger}. */
export interface RedisQuotaLedgerOptions {
  /**
   * The Redis client, through the library's adapter: `ioredisAdapter(new Redis(...))`, or over a
   * `Cluster`, whose adapter says `cluster: true`; a bucket's keys then share a slot, and a
   * batch's are split by slot (see {@link RedisQuotaLedger}).
   */
  readonly adapter: RedisAdapter;
  /** Prepended to every key (default `floodgate:`), then `rlqs:` and the bucket key as hash tag (`rlqs:{b:...}`). */
  readonly prefix?: string;
  /** The most reports one batch, and so one script call, grants (default 64); a tick with more sends several batches at once. */
  readonly maxReportsPerCall?: number;
  /** How long a lowered grant's freed part stays held once the lower grant has been sent, in ms (default 0): a margin for its delivery. */
  readonly handoverMs?: number;
  /** Where the changes other replicas publish are heard (default: nowhere; this replica then learns of them at its clients' reports). */
  readonly subscriber?: QuotaSubscriber;
}

/** A report waiting for its grants. */
interface PendingGrant extends GrantReport {
  resolve(grants: number[]): void;
  reject(error: unknown): void;
}

/** ScriptReply is a script call's answer: the ledger's epoch, and the grants. */
interface ScriptReply {
  readonly grants: number[];
}

/** RECOVERY_MARGIN_MS is added to the longest TTL a loss holds grants back for: a client's TTL starts when it receives its grant, a little after it was recorded. */
const RECOVERY_MARGIN_MS = 1000;

/**
 * RedisQuotaLedger is a {@link QuotaLedger} kept in Redis, so that several replicas of the service
 * grant from one budget per bucket. Its times are Redis's: the `nowMs` arguments are not used.
 * A report is granted whole or rejected: it resolves once every call carrying one of its entries
 * has answered, and a failed call rejects every report with an entry in it (the streams that asked
 * end with an error and their clients reconnect). On a single Redis a batch is one call, so it
 * succeeds or fails as one. On a cluster (`adapter.cluster`) a batch is one call per hash slot,
 * sent together; a report whose buckets span slots may be rejected while its calls to other slots
 * succeeded, and the grants those recorded stay outstanding until the client reports again, is
 * released, or their TTL runs out, so they can only leave other clients less, never more than the
 * limit. A release on a cluster is one call per slot too, and rejects if any of them fails.
 *
 * @example
 * const ledger = new RedisQuotaLedger({ adapter: ioredisAdapter(new Redis({ port: 6380 })) });
 * const quota = new QuotaService({ domains, ledger });
 */
export class RedisQuotaLedger implements QuotaLedger {
  private readonly adapter: RedisAdapter;
  private readonly prefix: string;
  private readonly maxReportsPerCall: number;
  private readonly handoverMs: number;
  private readonly subscriber: QuotaSubscriber | undefined;
  private readonly channel: string;
  private queue: PendingGrant[] = [];
  private readonly flushNow = (): void => this.flush();
  /** The epoch last seen per sentinel key. */
  private readonly epochs = new Map<string, string>();
  /** The longest assignment TTL granted, in ms: how long a loss holds grants back (beside a margin). */
  private maxTtlMs = 0;
  private readonly tokenPrefix = randomBytes(6).toString('hex');
  private calls = 0;
  /** Calls that lowered a grant, to settle at the next turn of the event loop: per sentinel, their buckets' keys and tokens. */
  private toSettle = new Map<string, { keys: Set<string>; tokens: string[] }>();
  private settling: Promise<unknown> = Promise.resolve();
  private events: LedgerEvents | undefined;

  /** Creates the ledger; it sends nothing until asked. */
  constructor(options: RedisQuotaLedgerOptions) {
    this.adapter = options.adapter;
    this.prefix = `${options.prefix ?? 'floodgate:'}rlqs:`;
    this.maxReportsPerCall = options.maxReportsPerCall ?? 64;
    this.handoverMs = options.handoverMs ?? 0;
    this.subscriber = options.subscriber;
    this.channel = `${this.prefix}changed`;
  }

  /** grant: see {@link QuotaLedger.grant}. Reports sharing a bucket in one batch are granted in the order they were asked. */
  grant(client: string, entries: readonly LedgerEntry[]): Promise<number[]> {
    if (entries.length === 0) return Promise.resolve([]);
    for (const e of entries) this.maxTtlMs = Math.max(this.maxTtlMs, e.ttlSeconds * 1000);
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(this.flushNow);
      this.queue.push({ client, entries, resolve, reject });
    });
  }

  /** regrant: see {@link QuotaLedger.regrant}. */
  async regrant(clients: readonly string[], entry: LedgerEntry): Promise<Array<number | undefined>> {
    if (clients.length === 0) return [];
    const keys = bucketKeysOf(this.prefix, entry.bucketKey);
    const args = [String(entry.limit), String(entry.ttlSeconds * 1000), ...clients];
    const reply = await this.run({ op: 'regrant', slot: this.slotOf(keys[0]), keys, args });
    return reply.grants.map((g) => (g < 0 ? undefined : g));
  }

  /** release: see {@link QuotaLedger.release}. */
  async release(client: string, bucketKeys: readonly string[]): Promise<void> {
    const calls = releaseKeysOf(bucketKeys, this.prefix, this.adapter.cluster);
    await Promise.all(calls.map(({ slot, keys }) => this.run({ op: 'release', slot, keys, args: [client] })));
  }

  /** listen: see {@link QuotaLedger.listen}. Subscribes with the `subscriber` option, if given. */
  listen(events: LedgerEvents): void {
    this.events = events;
    const at = `${this.prefix}{b:`;
    void this.subscriber
      ?.subscribe(this.channel, (message) => {
        const kind = message[0] === 'j' ? 'join' : 'freed';
        const key = message.slice(1);
        if (key.startsWith(at) && key.endsWith('}')) this.events?.changed(kind, key.slice(at.length, -1));
      })
      .catch(() => undefined);
  }

  /** close ends the subscription. */
  close(): void {
    this.subscriber?.close();
  }

  /** settled resolves once every call answered so far has been settled (for tests: a settle is otherwise sent on its own). */
  async settled(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    await this.settling;
  }

  private slotOf(hashKey: string): number {
    return this.adapter.cluster ? hashSlotOf(hashKey) : 0;
  }

  /** flush sends the tick's reports, in batches of at most `maxReportsPerCall` reports. */
  private flush(): void {
    const queue = this.queue;
    this.queue = [];
    for (let from = 0; from < queue.length; from += this.maxReportsPerCall)
      this.send(queue.slice(from, from + this.maxReportsPerCall));
  }

  /** send grants `batch` in one call per slot (one in all on a single Redis), settling each report once all its calls have answered. */
  private send(batch: readonly PendingGrant[]): void {
    const grants = batch.map((p) => new Array<number>(p.entries.length));
    const waiting = batch.map(() => 0);
    const calls = grantCallsOf(batch, this.prefix, this.adapter.cluster);
    for (const call of calls) for (const r of call.reports) waiting[r]!++;
    for (const call of calls) {
      this.call(call, grants).then(
        () => {
          for (const r of call.reports) if (--waiting[r]! === 0) batch[r]!.resolve(grants[r]!);
        },
        // A failed call never counts its reports down, so they are never resolved after it.
        (error: unknown) => {
          for (const r of call.reports) batch[r]!.reject(error);
        },
      );
    }
  }

  /** call runs one grant call and writes each grant it answers into `grants[report][entry]`. */
  private async call(call: GrantCall, grants: number[][]): Promise<void> {
    const reply = await this.run({ op: 'grant', slot: call.slot, keys: call.keys, args: call.args.slice(1) });
    if (reply.grants.length !== call.targets.length)
      throw new Error(
        `the RLQS ledger script answered ${reply.grants.length} grants for ${call.targets.length} buckets`,
      );
    call.targets.forEach(([r, i], at) => (grants[r]![i] = Math.max(0, reply.grants[at]!)));
  }

  /**
   * run sends one script call: `op` over `keys` (bucket hashes and sets) with `args`, behind the
   * sentinel of `slot` and the epoch last seen there. A new epoch is remembered (and told as a
   * loss when another was known); a call that lowered a grant is settled at the next turn.
   */
  private async run(call: {
    readonly op: string;
    readonly slot: number;
    readonly keys: readonly string[];
    readonly args: readonly string[];
  }): Promise<ScriptReply> {
    const sentinel = sentinelKeyOf(this.prefix, call.slot, this.adapter.cluster);
    const known = this.epochs.get(sentinel);
    const token = `${this.tokenPrefix}:${this.calls++}`;
    const header = [call.op, known ?? '', String(this.maxTtlMs + RECOVERY_MARGIN_MS), token, this.channel];
    const reply = await this.eval([sentinel, ...call.keys], [...header, ...call.args]);
    const [epoch, lowered, ...grants] = reply;
    if (typeof epoch !== 'string' || typeof lowered !== 'number' || grants.some((g) => typeof g !== 'number'))
      throw new Error(`the RLQS ledger script answered ${JSON.stringify(reply)}, not an epoch and a list of grants`);
    if (known !== epoch) {
      this.epochs.set(sentinel, epoch);
      if (known !== undefined) this.events?.lost();
    }
    if (lowered === 1) this.settleLater(sentinel, call.keys, token);
    return { grants: grants as number[] };
  }

  /** settleLater settles `token` on the next turn of the event loop, with the others of that turn (one call per sentinel). */
  private settleLater(sentinel: string, keys: readonly string[], token: string): void {
    if (this.toSettle.size === 0) setImmediate(() => this.settleNow());
    let group = this.toSettle.get(sentinel);
    if (group === undefined) this.toSettle.set(sentinel, (group = { keys: new Set(), tokens: [] }));
    for (const key of keys) group.keys.add(key);
    group.tokens.push(token);
  }

  /**
   * settleNow tells Redis that the grants of the calls waiting have been sent. A settle that fails
   * is not retried: its holds run out with the old grants' TTLs, which only leaves others less.
   */
  private settleNow(): void {
    const groups = this.toSettle;
    this.toSettle = new Map();
    const sent = [...groups.values()].map(({ keys, tokens }) => {
      const slot = this.slotOf([...keys][0]!);
      return this.run({ op: 'settle', slot, keys: [...keys], args: [String(this.handoverMs), ...tokens] }).catch(
        () => undefined,
      );
    });
    this.settling = Promise.all([this.settling, ...sent]);
  }

  private async eval(keys: readonly string[], args: readonly string[]): Promise<unknown[]> {
    let reply: unknown;
    try {
      reply = await this.adapter.evalsha(QUOTA_SCRIPT.sha1, keys, args);
    } catch (error) {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      reply = await this.adapter.eval(QUOTA_SCRIPT.source, keys, args);
    }
    if (!Array.isArray(reply))
      throw new Error(`the RLQS ledger script answered ${JSON.stringify(reply)}, not an epoch and a list of grants`);
    return reply as unknown[];
  }
}
