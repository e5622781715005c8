/**
 * The Rate Limit Quota Service: Envoy's `StreamRateLimitQuotas` over the domains' `quota:`
 * sections. Each report is checked, its buckets matched to rules, the client's demand recorded in
 * the ledger and its grants answered at once; a client joining or leaving a bucket makes the
 * others of this replica be granted again (after `redistributeDelayMs`, one pass per bucket).
 */
import { randomBytes } from 'node:crypto';
import { systemClock, systemTimers, type Clock, type Timers } from 'floodgate';
import type { DomainSpec } from '../service/config.js';
import { ABANDON, assignmentOf, blanketOf, burstOf, type BucketAction } from './actions.js';
import { bucketKeyOf, ruleOf, type BucketId } from './buckets.js';
import { demandOf, idleTooLong, overReported } from './fair-share.js';
import { MemoryQuotaLedger, type LedgerEntry, type QuotaLedger } from './ledger.js';
import { newQuotaCounts, type QuotaCounts, type QuotaStatsSource } from './metrics.js';
import { Passes } from './passes.js';
import { parseUsageReport, QuotaStreamError, readBucketId, type BucketUsage } from './report.js';
import { QuotaSession, type EncodedAction, type TrackedBucket, type Writable } from './session.js';
import type { QuotaSpec } from './spec.js';
import { encodeBucketAction } from './wire.js';

/** QuotaServiceOptions configures a {@link QuotaService}. */
export interface QuotaServiceOptions {
  readonly domains: readonly DomainSpec[];
  /** Where grants are kept (default: this process's memory; a `RedisQuotaLedger` shares them between replicas). */
  readonly ledger?: QuotaLedger;
  /** The time grants are given at (default the system clock); the Redis ledger uses Redis's instead. */
  readonly clock?: Clock;
  readonly timers?: Timers;
  /** How long after a client joins or leaves a bucket the others are granted again, in ms (default 100): joins and leaves within it are one pass per bucket. */
  readonly redistributeDelayMs?: number;
  /** What each value of a bucket id becomes before it names the bucket's key (in the ledger, on Redis): the decision service's hash (default: kept as it is). */
  readonly hideValue?: ((value: string) => string) | undefined;
}

/** QuotaStream is the part of a gRPC duplex stream the service reads and writes: reports arrive, and responses leave, as bytes. */
export interface QuotaStream extends Writable {
  on(event: 'data', listener: (message: Buffer) => void): unknown;
  on(event: 'end' | 'cancelled' | 'close' | 'error', listener: (error?: unknown) => void): unknown;
  end(): void;
  emit(event: 'error', status: { code: number; details: string }): boolean;
  pause(): unknown;
  resume(): unknown;
}

/** STATUS maps a stream error's code to its gRPC status code. */
const STATUS = { INVALID_REPORT: 3, TOO_MANY_BUCKETS: 8, INTERNAL: 13 } as const;
/** Reports a stream may have waiting before the service stops reading it. */
const MAX_QUEUED_REPORTS = 4;
/** How long before its TTL runs out a grant sent stops counting as held by its client, for a ledger that lost its records (ms). */
const HELD_MARGIN_MS = 1000;

/**
 * QuotaService answers RLQS streams. One instance serves every stream of a process; its ledger
 * decides the grants.
 *
 * @example
 * const quota = new QuotaService({ domains });
 * server.addService(rateLimitQuotaServiceDefinition(), quotaHandlers(quota));
 */
export class QuotaService implements QuotaStatsSource {
  private specs = new Map<string, QuotaSpec>();
  private generation = 0;
  private readonly ledger: QuotaLedger;
  private readonly clock: Clock;
  private readonly hideValue: ((value: string) => string) | undefined;
  private readonly members = new Map<string, Set<QuotaSession>>();
  private readonly passes: Passes;
  private readonly prefix = randomBytes(6).toString('hex');
  private nextId = 0;
  private readonly sessions = new Set<QuotaSession>();
  private listening = false;
  /** Once closing, departing streams keep their grants in the ledger (their clients keep their assignments until the TTL). */
  private closing = false;
  /** counts are the service's running totals, which `metrics.ts` hands to Prometheus. */
  readonly counts: QuotaCounts = newQuotaCounts();

  /** Creates the service over `options.domains` (those with a `quota:` section). */
  constructor(options: QuotaServiceOptions) {
    this.ledger = options.ledger ?? new MemoryQuotaLedger();
    this.clock = options.clock ?? systemClock;
    this.passes = new Passes({
      timers: options.timers ?? systemTimers,
      delayMs: options.redistributeDelayMs ?? 100,
      run: (key) => this.redistribute(key),
      serves: (key) => this.members.has(key),
      failed: () => this.counts.ledgerErrors.regrant++,
    });
    this.hideValue = options.hideValue;
    this.reload(options.domains);
  }

  /** reload serves `domains` from now on; buckets are matched again at their next report. */
  reload(domains: readonly DomainSpec[]): void {
    this.specs = new Map(domains.flatMap((d) => (d.quota === undefined ? [] : [[d.domain, d.quota] as const])));
    this.generation++;
  }

  /** stats returns the open streams, the buckets they report and the actions waiting for clients to read. */
  stats(): { streams: number; buckets: number; pending: number } {
    let buckets = 0;
    let pending = 0;
    for (const s of this.sessions) {
      buckets += s.buckets.size;
      pending += s.pendingCount;
    }
    return { streams: this.sessions.size, buckets, pending };
  }

  /**
   * close stops the redistribution timers and the ledger's listening. Streams are ended by the gRPC
   * server's shutdown, after this: their grants stay in the ledger until their TTL runs out, as
   * their clients keep their assignments until then (and reconnect elsewhere).
   */
  close(): void {
    this.closing = true;
    this.passes.close();
    this.ledger.close?.();
  }

  /** handle serves one `StreamRateLimitQuotas` call until it ends. */
  handle(call: QuotaStream): void {
    this.listen();
    const session = new QuotaSession(`${this.prefix}:${this.nextId++}`, call);
    this.sessions.add(session);
    let queue = Promise.resolve();
    let queued = 0;
    call.on('data', (message) => {
      if (session.closed) return;
      if (++queued >= MAX_QUEUED_REPORTS) call.pause();
      queue = queue
        .then(() => (session.closed ? undefined : this.report(session, message)))
        .catch((error: unknown) => this.fail(session, call, error))
        .finally(() => {
          if (--queued < MAX_QUEUED_REPORTS) call.resume();
        });
    });
    const leave = (): void => this.leave(session);
    call.on('end', () => {
      leave();
      call.end();
    });
    call.on('cancelled', leave);
    call.on('close', leave);
    call.on('error', leave);
  }

  /** listen has the ledger tell this replica of other replicas' joins and freed shares, from the first stream on. */
  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    this.ledger.listen?.({
      changed: (kind, key) => {
        if (kind === 'join' || this.passes.starves(key)) this.passes.ask(key);
      },
      lost: () => this.counts.ledgerLosses++,
    });
  }

  /**
   * fail ends a stream with an error. After a bad report, nothing of the stream is kept. After a
   * failure of the service's own (the ledger's), its grants stay in the ledger until their TTL:
   * its client keeps its assignments meanwhile and reconnects, so they are nobody else's yet.
   */
  private fail(session: QuotaSession, call: QuotaStream, error: unknown): void {
    if (session.closed) return;
    this.leave(session, error instanceof QuotaStreamError);
    this.counts.streamErrors[error instanceof QuotaStreamError ? error.code : 'INTERNAL']++;
    const status =
      error instanceof QuotaStreamError
        ? { code: STATUS[error.code], details: `${error.code}: ${error.message}` }
        : { code: STATUS.INTERNAL, details: `quota service failed: ${(error as Error)?.message ?? String(error)}` };
    call.emit('error', status);
  }

  private specOf(session: QuotaSession, domain: string): QuotaSpec {
    if (session.domain === undefined) {
      if (domain === '') throw new QuotaStreamError('INVALID_REPORT', "domain is required in a stream's first report");
      session.domain = domain;
    } else if (domain !== '' && domain !== session.domain) {
      throw new QuotaStreamError(
        'INVALID_REPORT',
        `domain ${JSON.stringify(domain)} differs from the stream's ${JSON.stringify(session.domain)}; open a new stream for another domain`,
      );
    }
    const spec = this.specs.get(session.domain);
    if (spec === undefined)
      throw new QuotaStreamError(
        'INVALID_REPORT',
        `domain ${JSON.stringify(session.domain)} has no quota section in the rate limit service's config`,
      );
    return spec;
  }

  private async report(session: QuotaSession, message: Buffer): Promise<void> {
    this.counts.reports++;
    const report = parseUsageReport(message);
    const spec = this.specOf(session, report.domain);
    if (report.usages.length > spec.maxBucketsPerStream) throw tooMany(report.usages.length, spec);
    // Every bucket id is read (and checked) before anything of the report is kept.
    const known = report.usages.map((u) => this.knownBucket(session, u));
    const ids = report.usages.map((u, i) => (known[i] === undefined ? readBucketId(u) : undefined));
    const nowMs = this.clock.now();
    const actions: Array<EncodedAction | undefined> = [];
    const granted: Array<{ at: number; tracked: TrackedBucket; entry: LedgerEntry }> = [];
    const changed: string[] = [];
    report.usages.forEach((usage, i) => {
      const key = known[i]?.key ?? bucketKeyOf(session.domain!, this.hidden(ids[i]!));
      const tracked = known[i] ?? this.track(session, spec, { key, bucket: ids[i]!, usage, nowMs }, changed);
      if (tracked === undefined) {
        actions.push({ key, bytes: encodeBucketAction(usage.bucketIdBytes, unknownAction(spec)) });
      } else if (this.abandoned(session, tracked, usage, nowMs)) {
        actions.push({ key, bytes: encodeBucketAction(tracked.bucketIdBytes, ABANDON) });
        changed.push(key);
      } else {
        tracked.demand = this.demandOf(tracked, usage);
        granted.push({ at: actions.length, tracked, entry: entryOf(tracked, tracked.demand, nowMs) });
        actions.push(undefined);
      }
    });
    const grants = await this.grant(
      session,
      granted.map((g) => g.entry),
      nowMs,
    );
    if (session.closed) return;
    granted.forEach((g, i) => {
      // A share freed while a client of this replica holds nothing is pushed to it at once.
      const lowered = (g.tracked.lastGranted ?? 0) > grants[i]!;
      actions[g.at] = this.answer(session, g.tracked, grants[i]!, nowMs);
      if (lowered && this.passes.starves(g.tracked.key)) changed.push(g.tracked.key);
    });
    session.send(actions as EncodedAction[]);
    this.counts.answered += actions.length;
    for (const key of changed) this.passes.ask(key);
  }

  /**
   * demandOf returns the client's demand of `t` after `usage`: its requests allowed and denied,
   * averaged with its demand before; a report allowing more than its assignments could have is
   * counted as an over-report.
   */
  private demandOf(t: TrackedBucket, usage: BucketUsage): number {
    const { elapsedMs } = usage;
    const periodSeconds = t.rule.periodSeconds;
    if (overReported(usage.allowed, t.allowance, { elapsedMs, periodSeconds })) this.counts.overReports++;
    t.allowance = undefined;
    return demandOf(t.demand, { requests: usage.allowed + usage.denied, elapsedMs }, periodSeconds);
  }

  /**
   * answer returns `t`'s assignment of `granted`, sent at `nowMs` on `session`, and keeps what was
   * sent: the grant, when, what it lets the client allow until its next report, and whether it
   * starves (counted while `session` tracks `t`).
   */
  private answer(session: QuotaSession, t: TrackedBucket, granted: number, nowMs: number): EncodedAction {
    const was = t.lastGranted;
    if ((was === 0) !== (granted === 0) && session.buckets.get(t.key) === t)
      this.passes.starve(t.key, granted === 0 ? 1 : -1);
    t.sentAtMs = nowMs;
    if (t.allowance === undefined || t.allowance.granted < granted)
      t.allowance = { granted, burstTokens: burstOf(t.rule, granted) };
    return answerOf(t, granted);
  }

  /** hidden returns `bucket` with each value passed through {@link QuotaServiceOptions.hideValue}, for its key; the rules match the values as sent. */
  private hidden(bucket: BucketId): BucketId {
    const hide = this.hideValue;
    if (hide === undefined) return bucket;
    const out: Record<string, string> = {};
    for (const k of Object.keys(bucket)) out[k] = hide(bucket[k]!);
    return out;
  }

  /** grant asks the ledger for `session`'s grants of `entries`, counting a failure. */
  private async grant(session: QuotaSession, entries: readonly LedgerEntry[], nowMs: number): Promise<number[]> {
    try {
      return await this.ledger.grant(session.id, entries, nowMs);
    } catch (error) {
      this.counts.ledgerErrors.grant++;
      throw error;
    }
  }

  /** knownBucket returns the bucket of `session` whose id the client encoded as `usage`'s, matched in the current config, or undefined. */
  private knownBucket(session: QuotaSession, usage: BucketUsage): TrackedBucket | undefined {
    const tracked = session.bucketOfIdBytes(usage.bucketIdBytes);
    return tracked?.generation === this.generation ? tracked : undefined;
  }

  /** track returns the session's bucket `key` (matching it to a rule on first sight or after a reload), or undefined for an unknown bucket. */
  private track(
    session: QuotaSession,
    spec: QuotaSpec,
    seen: { readonly key: string; readonly bucket: BucketId; readonly usage: BucketUsage; readonly nowMs: number },
    changed: string[],
  ): TrackedBucket | undefined {
    const { key, usage } = seen;
    const known = session.buckets.get(key);
    const rule = ruleOf(spec, seen.bucket);
    if (rule === undefined) {
      if (known !== undefined) this.forget(session, key, changed);
      return undefined;
    }
    if (known !== undefined) {
      if (known.generation !== this.generation) {
        known.rule = rule;
        known.generation = this.generation;
        known.answer = undefined;
      }
      session.keepIdBytes(usage.bucketIdBytes, known);
      return known;
    }
    if (session.buckets.size >= spec.maxBucketsPerStream) throw tooMany(session.buckets.size + 1, spec);
    const tracked: TrackedBucket = {
      key,
      bucket: seen.bucket,
      bucketIdBytes: usage.bucketIdBytes.slice(),
      rule,
      generation: this.generation,
      demand: undefined,
      lastActiveMs: seen.nowMs,
      lastGranted: undefined,
      sentAtMs: seen.nowMs,
      allowance: undefined,
      answer: undefined,
    };
    session.buckets.set(key, tracked);
    session.keepIdBytes(usage.bucketIdBytes, tracked);
    this.membersOf(key).add(session);
    changed.push(key);
    return tracked;
  }

  private abandoned(session: QuotaSession, t: TrackedBucket, usage: BucketUsage, nowMs: number): boolean {
    if (usage.allowed + usage.denied > 0) {
      t.lastActiveMs = nowMs;
      return false;
    }
    if (!idleTooLong(t.lastActiveMs, nowMs, t.rule.abandonAfterSeconds)) return false;
    this.forget(session, t.key, []);
    void this.ledger.release(session.id, [t.key], nowMs).catch(() => this.counts.ledgerErrors.release++);
    return true;
  }

  private forget(session: QuotaSession, key: string, changed: string[]): void {
    if (session.buckets.get(key)?.lastGranted === 0) this.passes.starve(key, -1);
    session.drop(key);
    this.members.get(key)?.delete(session);
    if (this.members.get(key)?.size === 0) this.members.delete(key);
    changed.push(key);
  }

  private membersOf(key: string): Set<QuotaSession> {
    let set = this.members.get(key);
    if (set === undefined) {
      set = new Set();
      this.members.set(key, set);
    }
    return set;
  }

  /** leave forgets `session`, and gives its shares back in the ledger when `release` (a client that ended its stream) and the service is not closing. */
  private leave(session: QuotaSession, release = true): void {
    if (session.closed) return;
    session.closed = true;
    this.sessions.delete(session);
    const keys = [...session.buckets.keys()];
    for (const key of keys) this.forget(session, key, []);
    if (!release || this.closing) return;
    void this.ledger
      .release(session.id, keys, this.clock.now())
      .then(() => keys.forEach((k) => this.passes.ask(k)))
      .catch(() => this.counts.ledgerErrors.release++);
  }

  /** redistribute grants again every session of this replica that reports bucket `key`, sending those whose grant changed. */
  private async redistribute(key: string): Promise<void> {
    const sessions = [...(this.members.get(key) ?? [])];
    if (sessions.length === 0) return;
    const first = sessions[0]!.buckets.get(key)!;
    const nowMs = this.clock.now();
    const grants = await this.ledger.regrant(
      sessions.map((s) => s.id),
      entryOf(first, undefined, nowMs),
      nowMs,
    );
    const pushes: Array<{ session: QuotaSession; tracked: TrackedBucket; grant: number }> = [];
    sessions.forEach((session, i) => {
      const tracked = session.buckets.get(key);
      const grant = grants[i];
      if (tracked === undefined || grant === undefined || grant === tracked.lastGranted || session.closed) return;
      pushes.push({ session, tracked, grant });
    });
    // The lowered grants go first: the ledger handed what they free to the others in this pass.
    pushes.sort((a, b) => a.grant - (a.tracked.lastGranted ?? 0) - (b.grant - (b.tracked.lastGranted ?? 0)));
    for (const { session, tracked, grant } of pushes) {
      session.send([this.answer(session, tracked, grant, nowMs)]);
      this.counts.pushed++;
    }
  }
}

/** entryOf returns `t`'s ledger entry at `nowMs`: its budget, `demand`, and the grant its client still holds (0 once within a second of its TTL). */
function entryOf(t: TrackedBucket, demand: number | undefined, nowMs: number): LedgerEntry {
  const ttlSeconds = t.rule.assignmentTtlSeconds;
  const live = nowMs < t.sentAtMs + ttlSeconds * 1000 - HELD_MARGIN_MS;
  const held = live ? (t.lastGranted ?? 0) : 0;
  return { bucketKey: t.key, limit: t.rule.limit, demand, ttlSeconds, held };
}

/** answerOf returns `t`'s assignment of `granted`, encoded once per grant (and rule) and sent again while the grant holds. */
function answerOf(t: TrackedBucket, granted: number): EncodedAction {
  if (t.answer === undefined || t.lastGranted !== granted) {
    t.answer = { key: t.key, bytes: encodeBucketAction(t.bucketIdBytes, assignmentOf(t.rule, granted)) };
    t.lastGranted = granted;
  }
  return t.answer;
}

function unknownAction(spec: QuotaSpec): BucketAction {
  if (spec.unknownBucket === 'abandon') return ABANDON;
  return blanketOf(spec.unknownBucket === 'allow' ? 'ALLOW_ALL' : 'DENY_ALL', spec.unknownBucketTtlSeconds);
}

function tooMany(count: number, spec: QuotaSpec): QuotaStreamError {
  return new QuotaStreamError(
    'TOO_MANY_BUCKETS',
    `the stream reports ${count} buckets, more than max_buckets_per_stream (${spec.maxBucketsPerStream}) of its domain's quota section; raise it, or report fewer buckets per stream`,
  );
}
