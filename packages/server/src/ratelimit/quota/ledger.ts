/**
 * The ledger: per bucket, each client's demand and outstanding grant, and their totals. The
 * memory ledger is here; the Redis ledger (`redis-ledger.ts`) keeps the same in Redis, so that
 * service replicas share one budget. Both apply `fair-share.ts`.
 */
import { changesMeaningfully, expiresAtMs, grantOf, targetOf, waterLevelOf } from './fair-share.js';

/** LedgerEntry is one bucket of one report: its key, its budget, and the client's demand (undefined: keep the last one). */
export interface LedgerEntry {
  readonly bucketKey: string;
  /** Requests per period, shared by the bucket's clients. */
  readonly limit: number;
  /** The client's demand in requests per period, or undefined to grant again on the demand last reported. */
  readonly demand: number | undefined;
  readonly ttlSeconds: number;
  /**
   * The grant the client holds now, as far as its replica knows (the last one sent, while its TTL
   * runs; 0 or undefined: none). A ledger that has lost its records (see `redis-ledger.ts`)
   * grants at most this until every grant given before the loss has expired.
   */
  readonly held?: number;
}

/** LedgerEvents are what a shared ledger tells the replica about the others: see {@link QuotaLedger.listen}. */
export interface LedgerEvents {
  /**
   * changed says that bucket `bucketKey` changed on some replica: a client joined it (`join`), or
   * its share was freed while a client of the bucket holds nothing (`freed`).
   */
  changed(kind: 'join' | 'freed', bucketKey: string): void;
  /** lost says that the ledger found the shared records lost (and is granting conservatively for a while). */
  lost(): void;
}

/**
 * QuotaLedger keeps who holds what of each bucket's budget. Every method takes the time; a ledger
 * never reads a clock (the Redis ledger uses Redis's own, so replicas agree).
 *
 * The caller sends every grant a call answers before the next turn of the event loop (a
 * `setImmediate`): a shared ledger counts a lowered grant as still held until then, so that the
 * part freed is handed to nobody before the client has been told it holds less.
 */
export interface QuotaLedger {
  /**
   * grant records `client`'s demand for each entry and returns its grant for each, in order
   * (whole requests per period), each held as outstanding until its TTL runs out.
   */
  grant(client: string, entries: readonly LedgerEntry[], nowMs: number): Promise<number[]>;
  /**
   * regrant grants again, on their last demand, every one of `clients` that holds a share of
   * `entry.bucketKey`: those whose share shrinks first, so that what they free reaches the others.
   * A grant changes only when it {@link changesMeaningfully} (its TTL is then renewed too);
   * otherwise it stays as it is. Returns each client's grant, or undefined for a client the
   * bucket no longer knows.
   */
  regrant(clients: readonly string[], entry: LedgerEntry, nowMs: number): Promise<Array<number | undefined>>;
  /** release drops `client` from each bucket: its share goes back to the others. */
  release(client: string, bucketKeys: readonly string[], nowMs: number): Promise<void>;
  /** listen has `events` told of what other replicas do (a ledger in one process has nothing to tell). */
  listen?(events: LedgerEvents): void;
  /** close stops listening. */
  close?(): void;
}

interface Holder {
  demand: number;
  granted: number;
  expiresAtMs: number;
}

interface BucketBook {
  readonly holders: Map<string, Holder>;
  demand: number;
  granted: number;
  /** When expired holders are next swept out (once a second at most). */
  sweepAtMs: number;
}

const SWEEP_EVERY_MS = 1000;

/**
 * MemoryQuotaLedger is a {@link QuotaLedger} in this process: one service replica's budget. A
 * bucket's holders are swept of expired grants at most once a second, so an expired grant may
 * count as outstanding for up to a second longer (never shorter). A lowered grant frees its part
 * at once: the one process that holds the ledger sends the lower grant before it grants anything
 * else (its calls answer synchronously), so no other client can be told of the part first.
 */
export class MemoryQuotaLedger implements QuotaLedger {
  private readonly books = new Map<string, BucketBook>();

  /** grant: see {@link QuotaLedger.grant}. */
  grant(client: string, entries: readonly LedgerEntry[], nowMs: number): Promise<number[]> {
    return Promise.resolve(entries.map((e) => this.grantOne(client, e, nowMs) ?? 0));
  }

  /** regrant: see {@link QuotaLedger.regrant}. */
  regrant(clients: readonly string[], entry: LedgerEntry, nowMs: number): Promise<Array<number | undefined>> {
    const book = this.books.get(entry.bucketKey);
    if (book === undefined) return Promise.resolve(clients.map(() => undefined));
    this.sweep(book, nowMs);
    // A pass changes grants, never demands: the water level holds for all of it.
    const level = once(() => levelOf(book, entry.limit));
    const order = clients
      .map((c, i) => ({ i, h: book.holders.get(c) }))
      .filter((x) => x.h !== undefined)
      .sort((a, b) => this.growth(book, a.h!, entry.limit, level) - this.growth(book, b.h!, entry.limit, level));
    const out: Array<number | undefined> = clients.map(() => undefined);
    for (const { i, h } of order) out[i] = this.regrantOne(book, h!, entry, { nowMs, level });
    return Promise.resolve(out);
  }

  /** release: see {@link QuotaLedger.release}. */
  release(client: string, bucketKeys: readonly string[], nowMs: number): Promise<void> {
    for (const key of bucketKeys) {
      const book = this.books.get(key);
      const h = book?.holders.get(client);
      if (book === undefined || h === undefined) continue;
      this.drop(book, client, h);
      this.sweep(book, nowMs);
      if (book.holders.size === 0) this.books.delete(key);
    }
    return Promise.resolve();
  }

  /** size returns how many buckets and holders the ledger keeps (for tests of bounded memory). */
  size(): { buckets: number; holders: number } {
    let holders = 0;
    for (const book of this.books.values()) holders += book.holders.size;
    return { buckets: this.books.size, holders };
  }

  private growth(book: BucketBook, h: Holder, limit: number, level: () => number): number {
    return targetOf(h.demand, { clients: book.holders.size, demand: book.demand, level }, limit) - h.granted;
  }

  private grantOne(client: string, e: LedgerEntry, nowMs: number): number | undefined {
    let book = this.books.get(e.bucketKey);
    if (book === undefined) {
      book = { holders: new Map(), demand: 0, granted: 0, sweepAtMs: nowMs + SWEEP_EVERY_MS };
      this.books.set(e.bucketKey, book);
    }
    this.sweep(book, nowMs);
    let h = book.holders.get(client);
    if (h === undefined) {
      if (e.demand === undefined) return undefined;
      h = { demand: 0, granted: 0, expiresAtMs: 0 };
      book.holders.set(client, h);
    }
    if (e.demand !== undefined) {
      book.demand += e.demand - h.demand;
      h.demand = e.demand;
    }
    const level = (): number => levelOf(book, e.limit);
    return this.settle(book, h, this.nextGrant(book, h, e.limit, level), e, nowMs);
  }

  private regrantOne(
    book: BucketBook,
    h: Holder,
    e: LedgerEntry,
    at: { readonly nowMs: number; readonly level: () => number },
  ): number {
    const next = this.nextGrant(book, h, e.limit, at.level);
    return changesMeaningfully(h.granted, next) ? this.settle(book, h, next, e, at.nowMs) : h.granted;
  }

  private nextGrant(book: BucketBook, h: Holder, limit: number, level: () => number): number {
    const totals = { clients: book.holders.size, demand: book.demand, granted: book.granted, level };
    return grantOf(targetOf(h.demand, totals, limit), h.granted, totals, limit);
  }

  private settle(book: BucketBook, h: Holder, granted: number, e: LedgerEntry, nowMs: number): number {
    book.granted += granted - h.granted;
    h.granted = granted;
    h.expiresAtMs = expiresAtMs(nowMs, e.ttlSeconds);
    return granted;
  }

  private sweep(book: BucketBook, nowMs: number): void {
    if (nowMs < book.sweepAtMs) return;
    book.sweepAtMs = nowMs + SWEEP_EVERY_MS;
    for (const [client, h] of book.holders) if (h.expiresAtMs <= nowMs) this.drop(book, client, h);
  }

  private drop(book: BucketBook, client: string, h: Holder): void {
    book.holders.delete(client);
    book.demand -= h.demand;
    book.granted -= h.granted;
  }
}

/** levelOf returns the water level of `book`'s demands under `limit` (see {@link waterLevelOf}). */
function levelOf(book: BucketBook, limit: number): number {
  const demands: number[] = [];
  for (const h of book.holders.values()) demands.push(h.demand);
  return waterLevelOf(demands, limit);
}

/** once returns `f`, computed at its first call and remembered. */
function once(f: () => number): () => number {
  let value: number | undefined;
  return () => (value ??= f());
}
