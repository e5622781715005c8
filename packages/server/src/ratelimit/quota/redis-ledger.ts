/**
 * The Redis ledger: every service replica on one Redis shares each bucket's budget. One script
 * call per report, per redistribution and per release (see `redis-script.ts`); the script applies
 * the same rules as `fair-share.ts` on Redis's clock.
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
}

/**
 * RedisQuotaLedger is a {@link QuotaLedger} kept in Redis, so that several replicas of the service
 * grant from one budget per bucket. Its times are Redis's: the `nowMs` arguments are not used.
 * A failed call rejects; the stream that asked ends with an error and its client reconnects.
 *
 * @example
 * const ledger = new RedisQuotaLedger({ adapter: ioredisAdapter(new Redis({ port: 6380 })) });
 * const quota = new QuotaService({ domains, ledger });
 */
export class RedisQuotaLedger implements QuotaLedger {
  private readonly adapter: RedisAdapter;
  private readonly prefix: string;

  /** Creates the ledger; it sends nothing until asked. */
  constructor(options: RedisQuotaLedgerOptions) {
    this.adapter = options.adapter;
    this.prefix = `${options.prefix ?? 'floodgate:'}rlqs:`;
  }

  /** grant: see {@link QuotaLedger.grant}. */
  async grant(client: string, entries: readonly LedgerEntry[]): Promise<number[]> {
    if (entries.length === 0) return [];
    const args = ['grant', client];
    for (const e of entries)
      args.push(String(e.limit), e.demand === undefined ? '' : String(e.demand), String(e.ttlSeconds * 1000));
    const reply = await this.run(this.keysOf(entries.map((e) => e.bucketKey)), args);
    return reply.map((g) => Math.max(0, g));
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
