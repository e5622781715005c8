import { randomUUID } from 'node:crypto';
import type { Algorithm } from '../core/algorithm.js';
import type { Clock } from '../core/clock.js';
import { ceilMs, type Decision } from '../core/decision.js';
import { FloodgateError } from '../core/errors.js';
import type { Timers } from '../core/timers.js';
import type { PolicyStore } from '../stores/store.js';
import { Alarm } from '../waiting/alarm.js';
import { ASK_RETRY_MS, KeyLease, type LeaseChunk } from './key-lease.js';
import { CONTENDED_MULTIPLE, type LeaseAnswer, type LeaseTerms } from './lease-ledger.js';
import type { LeaseSettings } from './lease-options.js';
import type { LeaseSource } from './lease-source.js';

/** LeasedTableOptions are the parts of a {@link LeasedTable}. */
export interface LeasedTableOptions {
  readonly policy: Algorithm;
  /** Where leases come from (Redis, or a {@link MemoryLeaseSource} in tests). */
  readonly source: LeaseSource;
  /**
   * The per-request table of the same policy on the same shared state: it decides a request the
   * source could not serve (the store away: its failure policy answers), and peeks, resets and
   * refunds when no lease is held.
   */
  readonly direct: PolicyStore;
  readonly settings: LeaseSettings;
  readonly terms: LeaseTerms;
  /** The local clock (durations only) and where the one return timer is set. */
  readonly clock: Clock;
  readonly timers: Timers;
  /** This node's id in the ledgers (default a random UUID). */
  readonly holder?: string;
  /**
   * Whether a request the units held cannot pay for goes to the per-request table whenever the
   * shared state may still admit it, contended or not (default false: refused here while the key is
   * contended, as this node's fair share says). For the workers of one host, where only the host's
   * total counts.
   */
  readonly tailPerRequest?: boolean;
  /** Throws a typed error for a key the shared store does not accept (checked once per key held). */
  readonly checkKey?: (key: string) => void;
}

/** LeaseCounts are a table's calls to the shared state, for benchmarks and dashboards. */
export interface LeaseCounts {
  /** Asks sent (grants, renewals, and requests that waited for units). */
  asks: number;
  /** Returns sent (units given back before their lease ended, or on close). */
  returns: number;
  /** Requests decided by the store's per-request table (the lease source failed). */
  direct: number;
}

/**
 * LeasedTable decides one policy's keys from quota leases: a {@link PolicyStore} that admits a
 * request from the units this node holds for its key, with no round trip, and asks the shared
 * state for more ahead of need, in the background, so that requests do not wait on renewals while
 * demand is steady. A request that finds too few units waits for the ask in flight and is
 * admitted from what it granted; if still short, it is decided by the store's per-request table
 * while the key has room to spare (so a node whose share of `maxOutstanding` is below its demand
 * over a round trip falls back to per-request decisions, never to refusals), and refused here
 * while the key is contended. With no ask in flight it asks itself (its cost decided by that ask,
 * exactly as a per-request decision would be).
 *
 * A node asks for enough units for half a lease of its recent demand; the ledger cuts that to the
 * node's share of `maxOutstanding` (its share of the demand on the key), and to its credit while
 * the key is contended. It renews when it is down to half of what its latest grant left it
 * holding (or to four round trips of its demand, if more). Units left
 * shortly before their lease ends are given back, as is everything on {@link close}.
 *
 * Answers: an admission from a lease says `remaining`: the units this node still holds, and
 * `resetMs` as the latest answer from the shared state said it. A refusal made here (the key's fair
 * share used up, or the policy refused a moment ago) says when to retry. When the source fails, the
 * request goes to the `direct` table, whose failure policy decides it.
 */
export class LeasedTable implements PolicyStore {
  readonly synchronous = false;
  /** Always true: the direct table's deadline and failure policy decide failures. */
  readonly decidesFailures = true;
  /** Always true: leases run on the shared clock and this table's own; callers may pass NaN. */
  readonly ownsClock = true;
  /** counts are this table's calls to the shared state. */
  readonly counts: LeaseCounts = { asks: 0, returns: 0, direct: 0 };
  private readonly keys = new Map<string, KeyLease>();
  /** The entry last in `keys` (the most recently used), or undefined. */
  private newest: KeyLease | undefined = undefined;
  private readonly holder: string;
  private readonly alarm: Alarm;
  /** How long before a lease ends its unspent units are given back, in ms. */
  private readonly returnLeadMs: number;
  private closed = false;

  constructor(private readonly o: LeasedTableOptions) {
    this.holder = o.holder ?? randomUUID();
    this.alarm = new Alarm(o.clock, o.timers, () => this.returnDue());
    this.returnLeadMs = Math.min(o.settings.leaseMs / 4, 250);
  }

  /** policy is the algorithm this table leases for. */
  get policy(): Algorithm {
    return this.o.policy;
  }

  /** held returns the units this node holds for `key` now (0 for a key it holds nothing of). */
  held(key: string): number {
    const k = this.keys.get(key);
    if (k === undefined) return 0;
    k.prune(this.o.clock.now());
    return k.balance;
  }

  /**
   * consume decides `cost` on `key` from this node's lease: at once, with no promise, when this node
   * holds enough units (the common case: no I/O to wait for); else a promise, asking for units.
   * Bad arguments and a closed table reject.
   */
  consume(key: string, cost: number, _nowMs: number): Decision | Promise<Decision> {
    let k: KeyLease;
    try {
      this.o.policy.checkCost(cost);
      if (this.closed) throw closedError();
      k = this.entry(key);
    } catch (error) {
      return Promise.reject(error);
    }
    const nowMs = this.o.clock.now();
    k.demanded(cost, nowMs);
    k.prune(nowMs);
    if (k.balance + 1e-9 >= cost) return this.spend(key, k, cost, nowMs);
    return this.short(key, k, cost);
  }

  /** peek answers from this node's lease when it holds enough, else as the direct table would. */
  peek(key: string, cost: number, nowMs: number): Promise<Decision> | Decision {
    const k = this.keys.get(key);
    const now = this.o.clock.now();
    k?.prune(now);
    if (k !== undefined && k.balance + 1e-9 >= cost) return this.admitted(k, k.balance - cost, now);
    return this.o.direct.peek(key, cost, nowMs);
  }

  /** refund puts `cost` back into this node's lease while it holds one, else gives it back to the shared state. */
  async refund(key: string, cost: number, nowMs: number): Promise<void> {
    this.o.policy.checkCost(cost);
    const k = this.keys.get(key);
    k?.prune(this.o.clock.now());
    const last = k?.chunks.at(-1);
    if (k !== undefined && last !== undefined) {
      last.units += cost;
      k.balance += cost;
      return;
    }
    await this.o.direct.refund(key, cost, nowMs);
  }

  /** forget drops this node's lease on `key` (its units count as spent), as after a reset made elsewhere. */
  forget(key: string): void {
    this.keys.delete(key);
  }

  /** wake ends a local refusal of `key` (the shared state was given units back): its next request asks. */
  wake(key: string): void {
    const k = this.keys.get(key);
    if (k !== undefined) k.quietUntilMs = -Infinity;
  }

  /** reset forgets this node's lease on `key` (its units are spent) and the shared state of the key. */
  async reset(key: string): Promise<void> {
    this.keys.delete(key);
    await this.o.direct.reset(key);
  }

  /**
   * close gives back every unit this node holds and ends its records in the ledgers; it resolves
   * once the shared state has answered (or failed: units not given back stay out until their lease
   * ends). Later calls fail with `LIMITER_CLOSED`.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.alarm.setAt(Infinity);
    const backs: Promise<unknown>[] = [];
    for (const [key, k] of this.keys) backs.push(this.giveBack(key, k.takeAll(), 0, true));
    this.keys.clear();
    await Promise.allSettled(backs);
  }

  private entry(key: string): KeyLease {
    let k = this.keys.get(key);
    if (k !== undefined) {
      // Most recently used last, so that the first entries are the ones to let go; a key used
      // again right after itself (a hot key) is already there.
      if (k !== this.newest) {
        this.keys.delete(key);
        this.keys.set(key, k);
        this.newest = k;
      }
      return k;
    }
    if (typeof key !== 'string' || key.length === 0)
      throw new FloodgateError('INVALID_KEY', 'key must be a non-empty string', 'key');
    this.o.checkKey?.(key);
    k = new KeyLease();
    this.keys.set(key, k);
    this.newest = k;
    if (this.keys.size > this.o.settings.maxKeys) this.letGo();
    return k;
  }

  /** Gives back the least recently used key's units and forgets it. */
  private letGo(): void {
    const [key, k] = this.keys.entries().next().value as [string, KeyLease];
    this.keys.delete(key);
    void this.giveBack(key, k.takeAll(), 0, true);
  }

  private spend(key: string, k: KeyLease, cost: number, nowMs: number): Decision {
    k.spend(cost);
    this.renewAhead(key, k, nowMs);
    return this.admitted(k, k.balance, nowMs);
  }

  private admitted(k: KeyLease, remaining: number, nowMs: number): Decision {
    return {
      allowed: true,
      limit: this.o.policy.limit,
      remaining: remaining > 0 ? Math.floor(remaining + 1e-9) : 0,
      retryAfterMs: 0,
      resetMs: ceilMs(k.resetAtMs - nowMs),
      reason: 'ok',
    };
  }

  /** Asks for more, in the background, when what is held would soon run out and no ask is out. */
  private renewAhead(key: string, k: KeyLease, nowMs: number): void {
    if (k.asking !== undefined || nowMs < k.quietUntilMs || nowMs < k.directUntilMs) return;
    // Half of what it held after its latest grant, or four round trips of its demand if more: the
    // renewal lands before the units run out even while the demand estimate is still rising.
    const aheadMs = Math.max(4 * k.rttMs, 2);
    const lowWater = Math.max(Math.ceil(k.demandAt(nowMs) * aheadMs), Math.floor(k.holdTarget / 2));
    if (k.balance > lowWater) return;
    this.ask(key, k, 0).catch(() => undefined);
  }

  /**
   * A request that finds too few units waits for at most one ask: the one in flight (one per key
   * at a time, so that what each ask says it holds counts every earlier grant), after which it is
   * admitted from what that ask granted or refused; with none in flight, it asks with its cost.
   */
  private async short(key: string, k: KeyLease, cost: number): Promise<Decision> {
    if (k.asking !== undefined) {
      const served = await this.afterAsk(key, k, cost);
      if (served !== undefined) return served;
      // Still short after one ask: while the key has room to spare (not contended) the store's
      // per-request table decides it (batched, exact), as it would without leases; this node's
      // share of maxOutstanding is then below its demand over a round trip. While the key is
      // contended or refusing, it is refused here, as this node's share says. Never a second ask.
      const nowMs = this.o.clock.now();
      if (
        nowMs >= k.quietUntilMs &&
        (this.o.tailPerRequest === true || k.sharedRemaining >= CONTENDED_MULTIPLE * this.o.terms.maxOutstanding)
      )
        return this.directly(key, cost);
      return this.refusedHere(k, this.o.clock.now());
    }
    const nowMs = this.o.clock.now();
    if (nowMs < k.quietUntilMs) return this.refusedHere(k, nowMs);
    if (nowMs < k.directUntilMs) return this.directly(key, cost);
    let answer: LeaseAnswer;
    try {
      answer = await this.ask(key, k, cost);
    } catch (error) {
      if (error instanceof FloodgateError && (error.code === 'STORE_REPLY' || error.code === 'INVALID_KEY'))
        throw error;
      return this.directly(key, cost);
    }
    const d: Decision = {
      allowed: answer.spent,
      limit: this.o.policy.limit,
      remaining: Math.max(0, Math.floor(answer.remaining + 1e-9)),
      retryAfterMs: answer.spent ? 0 : answer.retryAfterMs,
      resetMs: answer.resetMs,
      reason: answer.spent ? 'ok' : 'limit',
    };
    return d;
  }

  /** Waits for the ask in flight, then admits from what it granted, or sends the request to the per-request table while asks fail; undefined: still short. */
  private async afterAsk(key: string, k: KeyLease, cost: number): Promise<Decision | undefined> {
    await k.asking;
    const nowMs = this.o.clock.now();
    k.prune(nowMs);
    if (k.balance + 1e-9 >= cost) return this.spend(key, k, cost, nowMs);
    if (nowMs < k.directUntilMs) return this.directly(key, cost);
    return undefined;
  }

  /** Decides a request with the per-request table: the store's circuit and failure policy answer while it is away. */
  private directly(key: string, cost: number): Promise<Decision> | Decision {
    this.counts.direct++;
    return this.o.direct.consume(key, cost, Number.NaN);
  }

  private refusedHere(k: KeyLease, nowMs: number): Decision {
    return {
      allowed: false,
      limit: this.o.policy.limit,
      remaining: 0,
      retryAfterMs: Math.max(1, ceilMs(k.quietUntilMs - nowMs)),
      resetMs: ceilMs(k.resetAtMs - nowMs),
      reason: 'limit',
    };
  }

  /** Sends one ask for `key` (with `spend` for a request waiting on it) and keeps what it grants. */
  private ask(key: string, k: KeyLease, spend: number): Promise<LeaseAnswer> {
    const sentAtMs = this.o.clock.now();
    const demandPerMs = k.demandAt(sentAtMs);
    const sent = this.o.source.ask(key, {
      holder: this.holder,
      demand: Math.round(demandPerMs * 1e6),
      held: k.balance,
      // Half a lease of its recent demand: the ledger cuts it to its share of maxOutstanding.
      wanted: Math.max(1, Math.ceil((demandPerMs * this.o.settings.leaseMs) / 2)),
      spend,
    });
    this.counts.asks++;
    const kept = sent.then(
      (answer) => {
        this.kept(key, k, answer, sentAtMs);
        return answer;
      },
      (error: unknown) => {
        k.directUntilMs = this.o.clock.now() + ASK_RETRY_MS;
        throw error;
      },
    );
    const settled = kept.then(
      () => undefined,
      () => undefined,
    );
    k.asking = settled;
    void settled.then(() => {
      if (k.asking === settled) k.asking = undefined;
    });
    return kept;
  }

  private kept(key: string, k: KeyLease, answer: LeaseAnswer, sentAtMs: number): void {
    const nowMs = this.o.clock.now();
    k.rttMs = 0.8 * k.rttMs + 0.2 * Math.max(0, nowMs - sentAtMs);
    // Lease ends are counted from the moment the ask left: never later than the shared clock's end.
    if (answer.granted > 0 && !this.closed) {
      k.add({
        units: answer.granted,
        expiresAtMs: sentAtMs + answer.durationMs,
        sharedExpiresAtMs: answer.expiresAtMs,
      });
      k.holdTarget = k.balance;
      this.rearm(k);
    } else if (answer.granted > 0) {
      void this.giveBack(
        key,
        [{ units: answer.granted, expiresAtMs: 0, sharedExpiresAtMs: answer.expiresAtMs }],
        0,
        true,
      );
    }
    k.resetAtMs = nowMs + answer.resetMs;
    k.sharedRemaining = answer.remaining;
    const quietMs = Math.max(answer.nextAskInMs, answer.spent ? 0 : answer.retryAfterMs);
    k.quietUntilMs = quietMs > 0 ? nowMs + quietMs : -Infinity;
  }

  /** Gives back the units of leases about to end; runs when the alarm rings. */
  private returnDue(): void {
    const nowMs = this.o.clock.now();
    let next = Infinity;
    for (const [key, k] of this.keys) {
      // Never beside an ask in flight: the return says what the node keeps, which that ask's grant would change.
      if (k.asking !== undefined) {
        next = Math.min(next, nowMs + 1);
        continue;
      }
      const due = k.takeDue(nowMs, this.returnLeadMs);
      if (due.length > 0) void this.giveBack(key, due, k.balance, false);
      next = Math.min(next, k.dueAtMs(this.returnLeadMs));
    }
    this.alarm.setAt(next);
  }

  private rearm(k: KeyLease): void {
    const dueAtMs = k.dueAtMs(this.returnLeadMs);
    if (dueAtMs < this.alarm.armedAtMs) this.alarm.setAt(dueAtMs);
  }

  /** Gives `chunks` back, one return per chunk with units; failures leave the units to their lease's end. */
  private async giveBack(key: string, chunks: readonly LeaseChunk[], held: number, leaving: boolean): Promise<void> {
    const sends = chunks.filter((c) => c.units > 0);
    if (sends.length === 0 && leaving) sends.push({ units: 0, expiresAtMs: 0, sharedExpiresAtMs: 0 });
    for (const [i, chunk] of sends.entries()) {
      this.counts.returns++;
      try {
        await this.o.source.giveBack(key, {
          holder: this.holder,
          units: chunk.units,
          expiresAtMs: chunk.sharedExpiresAtMs,
          held,
          leaving: leaving && i === sends.length - 1,
        });
      } catch {
        return;
      }
    }
  }
}

function closedError(): FloodgateError {
  return new FloodgateError(
    'LIMITER_CLOSED',
    'this leased table was closed (its units were given back): build a new LeasedStore',
    'LeasedStore',
  );
}
