/**
 * The Redis ledger: every service replica on one Redis, or one Redis Cluster, shares each bucket's
 * budget. Reports are granted in batches, as the library's RedisStore batches decisions: the
 * reports of one tick of the event loop go in one script call (sent without waiting for the calls
 * already out), so a busy replica makes a call per tick rather than one per report; on a cluster,
 * one call per hash slot of the tick's buckets (`redis-calls.ts`). One call per redistribution and
 * per release (per slot on a cluster; see `redis-script.ts`); the script applies the same rules as
 * `fair-share.ts` on Redis's clock.
 */
import type { RedisAdapter } from 'floodgate/redis';
import type { LedgerEntry, QuotaLedger } from './ledger.js';
import { bucketKeysOf, grantCallsOf, releaseKeysOf, type GrantCall, type GrantReport } from './redis-calls.js';
import { QUOTA_SCRIPT } from './redis-script.js';

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
}

/** A report waiting for its grants. */
interface PendingGrant extends GrantReport {
  resolve(grants: number[]): void;
  reject(error: unknown): void;
}

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
  private queue: PendingGrant[] = [];
  private readonly flushNow = (): void => this.flush();

  /** Creates the ledger; it sends nothing until asked. */
  constructor(options: RedisQuotaLedgerOptions) {
    this.adapter = options.adapter;
    this.prefix = `${options.prefix ?? 'floodgate:'}rlqs:`;
    this.maxReportsPerCall = options.maxReportsPerCall ?? 64;
  }

  /** grant: see {@link QuotaLedger.grant}. Reports sharing a bucket in one batch are granted in the order they were asked. */
  grant(client: string, entries: readonly LedgerEntry[]): Promise<number[]> {
    if (entries.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(this.flushNow);
      this.queue.push({ client, entries, resolve, reject });
    });
  }

  /** regrant: see {@link QuotaLedger.regrant}. */
  async regrant(clients: readonly string[], entry: LedgerEntry): Promise<Array<number | undefined>> {
    if (clients.length === 0) return [];
    const args = ['regrant', String(entry.limit), String(entry.ttlSeconds * 1000), ...clients];
    const reply = await this.run(bucketKeysOf(this.prefix, entry.bucketKey), args);
    return reply.map((g) => (g < 0 ? undefined : g));
  }

  /** release: see {@link QuotaLedger.release}. */
  async release(client: string, bucketKeys: readonly string[]): Promise<void> {
    const calls = releaseKeysOf(bucketKeys, this.prefix, this.adapter.cluster);
    await Promise.all(calls.map((keys) => this.run(keys, ['release', client])));
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
    const reply = await this.run(call.keys, call.args);
    if (reply.length !== call.targets.length)
      throw new Error(`the RLQS ledger script answered ${reply.length} grants for ${call.targets.length} buckets`);
    call.targets.forEach(([r, i], at) => (grants[r]![i] = Math.max(0, reply[at]!)));
  }

  private async run(keys: readonly string[], args: readonly string[]): Promise<number[]> {
    let reply: unknown;
    try {
      reply = await this.adapter.evalsha(QUOTA_SCRIPT.sha1, keys, args);
    } catch (error) {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      reply = await this.adapter.eval(QUOTA_SCRIPT.source, keys, args);
    }
    if (!Array.isArray(reply) || reply.some((g) => typeof g !== 'number'))
      throw new Error(`the RLQS ledger script answered ${JSON.stringify(reply)}, not a list of grants`);
    return reply as number[];
  }
}
