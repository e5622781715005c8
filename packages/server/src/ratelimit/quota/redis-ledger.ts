/**
 * The Redis ledger: every service replica on one Redis shares each bucket's budget. Reports are
 * granted in batches, as the library's RedisStore batches decisions: the reports of one tick of
 * the event loop go in one script call (sent without waiting for the calls already out), so a busy
 * replica makes a call per tick rather than one per report. One call per redistribution and per
 * release (see `redis-script.ts`); the script applies the same rules as `fair-share.ts` on Redis's
 * clock.
 */
import type { RedisAdapter } from 'floodgate/redis';
import type { LedgerEntry, QuotaLedger } from './ledger.js';
import { QUOTA_SCRIPT } from './redis-script.js';

/** RedisQuotaLedgerOptions configures a {@link RedisQuotaLedger}. */
export interface RedisQuotaLedgerOptions {
  /** The Redis client, through the library's adapter (`ioredisAdapter(new Redis(...))`). One Redis, not a cluster: a report's buckets may hash to several slots. */
  readonly adapter: RedisAdapter;
  /** Prepended to every key (default `floodgate:`), then `rlqs:`. */
  readonly prefix?: string;
  /** The most reports one script call grants (default 64); a tick with more sends several calls at once. */
  readonly maxReportsPerCall?: number;
}

/** A report waiting for its grants. */
interface PendingGrant {
  readonly client: string;
  readonly entries: readonly LedgerEntry[];
  resolve(grants: number[]): void;
  reject(error: unknown): void;
}

/**
 * RedisQuotaLedger is a {@link QuotaLedger} kept in Redis, so that several replicas of the service
 * grant from one budget per bucket. Its times are Redis's: the `nowMs` arguments are not used.
 * A failed call rejects every report of its batch; the streams that asked end with an error and
 * their clients reconnect.
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

  /** grant: see {@link QuotaLedger.grant}. Reports granted in one call are granted in the order they were asked. */
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
    const reply = await this.run(this.keysOf([entry.bucketKey]), args);
    return reply.map((g) => (g < 0 ? undefined : g));
  }

  /** release: see {@link QuotaLedger.release}. */
  async release(client: string, bucketKeys: readonly string[]): Promise<void> {
    if (bucketKeys.length === 0) return;
    await this.run(this.keysOf(bucketKeys), ['release', client]);
  }

  /** flush sends the tick's reports, in calls of at most `maxReportsPerCall` reports. */
  private flush(): void {
    const queue = this.queue;
    this.queue = [];
    for (let from = 0; from < queue.length; from += this.maxReportsPerCall)
      this.send(queue.slice(from, from + this.maxReportsPerCall));
  }

  private send(batch: readonly PendingGrant[]): void {
    const index = new Map<string, number>();
    const keys: string[] = [];
    const args = ['grant'];
    let entries = 0;
    for (const p of batch) {
      let arg = p.client;
      for (const e of p.entries) {
        let k = index.get(e.bucketKey);
        if (k === undefined) {
          k = index.size + 1;
          index.set(e.bucketKey, k);
          keys.push(`${this.prefix}${e.bucketKey}`, `${this.prefix}${e.bucketKey}:expiry`);
        }
        arg += ` ${k} ${e.limit} ${e.demand ?? '-'} ${e.ttlSeconds * 1000}`;
      }
      args.push(arg);
      entries += p.entries.length;
    }
    this.run(keys, args)
      .then((reply) => {
        if (reply.length !== entries)
          throw new Error(`the RLQS ledger script answered ${reply.length} grants for ${entries} buckets`);
        let at = 0;
        for (const p of batch) {
          p.resolve(reply.slice(at, at + p.entries.length).map((g) => Math.max(0, g)));
          at += p.entries.length;
        }
      })
      .catch((error: unknown) => {
        for (const p of batch) p.reject(error);
      });
  }

  private keysOf(bucketKeys: readonly string[]): string[] {
    return bucketKeys.flatMap((k) => [`${this.prefix}${k}`, `${this.prefix}${k}:expiry`]);
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
