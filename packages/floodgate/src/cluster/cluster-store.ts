import type { Algorithm } from '../core/algorithm.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import { FloodgateError } from '../core/errors.js';
import { StoreTimeout } from '../core/store-timeout.js';
import { systemTimers, type Timers } from '../core/timers.js';
import { LeasedTable } from '../leases/leased-table.js';
import type { LeaseAnswer, LeaseAsk, LeaseReturn, LeaseTerms } from '../leases/lease-ledger.js';
import { leaseSettingsOf, leaseTermsOf, type LeaseOptions, type LeaseSettings } from '../leases/lease-options.js';
import type { LeaseSource } from '../leases/lease-source.js';
import { Bindings } from '../stores/bindings.js';
import { GuardedTable, type FailurePolicy } from '../stores/guarded-table.js';
import { policyIdentity } from '../stores/memory-store.js';
import type { PolicyStore, Store } from '../stores/store.js';
import { ChannelCaller } from './channel-caller.js';
import { processChannel } from './channels.js';
import { badReply, decisionFromWire, numberOf, wire, type ClusterChannel, type ClusterNotice } from './protocol.js';

/** ClusterStoreOptions configures a {@link ClusterStore}. */
export interface ClusterStoreOptions extends LeaseOptions {
  /**
   * The link to the {@link ClusterStoreHost}: by default this process's IPC channel to its parent
   * (a worker of node's cluster, or a child forked with an IPC channel); `portChannel(parentPort)`
   * in a worker thread; `socketChannel(path)` for processes a manager such as PM2 starts.
   */
  channel?: ClusterChannel;
  /**
   * The share of each limit that may be out on leases across the workers at once (default 0.01):
   * the most a token bucket, leaky bucket or GCRA can admit above its limit, per window. A policy
   * whose share is under one unit is decided per request, exactly. Fixed windows are exact at any
   * share. See `leaseOverAdmission`.
   */
  maxOutstandingShare?: number;
  /** Longest wait for the host, in ms (default 250); then `onError` answers. */
  timeoutMs?: number;
  /** What a decision the host did not answer gets (default `fail-open`, as a `Limiter`'s). */
  onError?: FailurePolicy;
  /** The clock leases are timed on (default the system clock; the host decides on its own). */
  clock?: Clock;
  timers?: Timers;
}

/** ClusterCounts are the calls a {@link ClusterStore} made, for benchmarks and tests. */
export interface ClusterCounts {
  /** Messages sent to the host. */
  readonly sent: number;
}

/**
 * ClusterStore is the {@link Store} for an app of several processes (node's cluster module, PM2's
 * cluster mode) or worker threads on one host: every limit is one limit for the host, kept by one
 * {@link ClusterStoreHost}, with no Redis.
 *
 * A token bucket, leaky bucket, GCRA or fixed window is decided from quota leases: each worker
 * takes units of a key's limit from the host in one message and admits requests from them with no
 * message at all, renewing ahead of need; a worker whose share is used up refuses locally until the
 * host said to come back. A fixed window stays exact (a lease ends with its window); the others admit
 * at most `maxOutstandingShare` of the limit (default 1%) above it. A policy whose share is under one
 * unit, and the sliding windows, are decided per request by the host: exact, one message each.
 *
 * @example
 * import cluster from 'node:cluster';
 * import { Limiter, fixedWindow } from 'floodgate';
 * import { ClusterStore, ClusterStoreHost, serveClusterWorkers } from 'floodgate/cluster';
 * if (cluster.isPrimary) {
 *   serveClusterWorkers(new ClusterStoreHost(), cluster);
 *   cluster.fork(); cluster.fork();
 * } else {
 *   const limiter = new Limiter({ policy: fixedWindow({ limit: 100, windowMs: 60_000 }), store: new ClusterStore() });
 *   // ... await limiter.consume(ip): 100 a minute for the host, whichever worker answers
 * }
 */
export class ClusterStore implements Store {
  readonly name = 'cluster';
  private readonly caller: ChannelCaller;
  private readonly settings: LeaseSettings;
  private readonly onError: FailurePolicy;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly tables = new Bindings<PolicyStore & { close?(): Promise<void> }>();
  /** The leased tables by policy identity, for the host's notices. */
  private readonly leased = new Map<string, LeasedTable>();

  constructor(options: ClusterStoreOptions = {}) {
    this.settings = leaseSettingsOf(
      { ...options, maxOutstandingShare: options.maxOutstandingShare ?? 0.01 },
      'ClusterStore',
    );
    const timeoutMs = options.timeoutMs ?? 250;
    if (typeof timeoutMs !== 'number' || !(timeoutMs > 0))
      throw new FloodgateError(
        'INVALID_OPTION',
        `ClusterStore.timeoutMs must be a number of ms above 0, got ${String(timeoutMs)}`,
        'ClusterStore.timeoutMs',
      );
    this.onError = options.onError ?? 'fail-open';
    if (!['fail-open', 'fail-closed', 'throw'].includes(this.onError))
      throw new FloodgateError(
        'INVALID_OPTION',
        `ClusterStore.onError must be 'fail-open', 'fail-closed' or 'throw', got ${JSON.stringify(this.onError)}`,
        'ClusterStore.onError',
      );
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? systemTimers;
    this.caller = new ChannelCaller(options.channel ?? processChannel(), this.clock, this.timers, timeoutMs, (n) =>
      this.heard(n),
    );
  }

  /** counts are the messages this store has sent to the host. */
  get counts(): ClusterCounts {
    return { sent: this.caller.sent };
  }

  /**
   * bind returns the table of `algorithm`: leased where leases are sound and worth a unit
   * (see the class), else decided per request by the host.
   */
  bind(algorithm: Algorithm): PolicyStore {
    return this.tables.bind(algorithm, () => this.tableOf(algorithm));
  }

  /** release undoes one bind; the last one gives that table's leased units back. */
  release(algorithm: Algorithm): void {
    const table = this.tables.release(algorithm);
    if (table === undefined) return;
    this.leased.delete(policyIdentity(algorithm));
    void table.close?.();
  }

  /**
   * heard takes a host's notice: another worker reset a key (what this worker holds of it is
   * forgotten, as that worker's was) or refunded it (this worker asks again rather than refusing it
   * locally until the time the host gave before).
   */
  private heard(notice: ClusterNotice): void {
    const table = this.leased.get(notice.policy);
    if (table === undefined) return;
    if (notice.notice === 'reset') table.forget(notice.key);
    else table.wake(notice.key);
  }

  /** close gives back every leased unit, then lets the channel go; later calls fail with `LIMITER_CLOSED`. */
  async close(): Promise<void> {
    this.leased.clear();
    await Promise.allSettled(this.tables.drain().map((table) => table.close?.()));
    this.caller.close();
  }

  private tableOf(algorithm: Algorithm): PolicyStore & { close?(): Promise<void> } {
    const identity = policyIdentity(algorithm);
    const direct = new GuardedTable(new HostTable(this.caller, identity, algorithm), {
      onError: this.onError,
      timeout: StoreTimeout.of(Infinity, 'ClusterStore.timeoutMs'),
      limit: algorithm.limit,
      clock: this.clock,
      timers: this.timers,
      observer: undefined,
      storeName: 'cluster',
    });
    const terms = termsOf(algorithm, this.settings);
    if (terms === undefined) return Object.assign(direct, { decidesFailures: true as const });
    const leased = new LeasedTable({
      policy: algorithm,
      source: new HostLeaseSource(this.caller, identity, terms),
      direct,
      settings: this.settings,
      terms,
      clock: this.clock,
      timers: this.timers,
      tailPerRequest: true,
    });
    this.leased.set(identity, leased);
    // Queue-mode callers book future turns on the host's own state (a lease holds no future).
    if (direct.reserve !== undefined) return Object.assign(leased, { reserve: direct.reserve.bind(direct) });
    return leased;
  }
}

/**
 * termsOf returns the lease terms of `algorithm`, or undefined when it is decided per request:
 * a policy leases cannot run, or one whose share of outstanding units is under one (leasing it
 * could admit a whole unit more than the share promises).
 */
function termsOf(algorithm: Algorithm, settings: LeaseSettings): LeaseTerms | undefined {
  let terms: LeaseTerms;
  try {
    terms = leaseTermsOf(algorithm, settings);
  } catch {
    return undefined;
  }
  if (terms.windowMs > 0) return terms;
  return Math.floor(settings.maxOutstandingShare * algorithm.limit + 1e-9) >= 1 ? terms : undefined;
}

/** HostTable is one policy's per-request table at the host: every call one message. */
class HostTable implements PolicyStore {
  readonly synchronous = false;
  readonly ownsClock = true;
  readonly reserve: PolicyStore['reserve'];

  constructor(
    private readonly caller: ChannelCaller,
    private readonly identity: string,
    policy: Algorithm,
  ) {
    if (policy.reserve === undefined) this.reserve = undefined;
    else
      this.reserve = async (key, cost, _nowMs, maxWaitMs) => {
        const v = numberOf(await this.caller.call('reserve', this.identity, key, [cost, wire(maxWaitMs)]));
        if (Number.isNaN(v)) throw badReply('a wait in ms', v);
        return v;
      };
  }

  async consume(key: string, cost: number): Promise<Decision> {
    return decisionFromWire(await this.caller.call('consume', this.identity, key, [cost]));
  }

  async peek(key: string, cost: number): Promise<Decision> {
    return decisionFromWire(await this.caller.call('peek', this.identity, key, [cost]));
  }

  async refund(key: string, cost: number): Promise<void> {
    await this.caller.call('refund', this.identity, key, [cost]);
  }

  async reset(key: string): Promise<void> {
    await this.caller.call('reset', this.identity, key, []);
  }
}

/** HostLeaseSource is the host's side of one policy's leases, as a {@link LeaseSource}. */
class HostLeaseSource implements LeaseSource {
  private readonly terms: readonly number[];

  constructor(
    private readonly caller: ChannelCaller,
    private readonly identity: string,
    terms: LeaseTerms,
  ) {
    this.terms = [terms.maxOutstanding, terms.leaseMs, terms.ratePerMs, terms.windowMs];
  }

  async ask(key: string, ask: LeaseAsk): Promise<LeaseAnswer> {
    const args = [ask.demand, ask.held, ask.wanted, ask.spend, ...this.terms];
    const reply = await this.caller.call('ask', this.identity, key, args, ask.holder);
    const f = Array.isArray(reply) && reply.length === 9 ? reply.map(numberOf) : undefined;
    if (f === undefined || f.some(Number.isNaN) || (f[0] !== 0 && f[0] !== 1))
      throw badReply('a lease answer of nine numbers', reply);
    return {
      spent: f[0] === 1,
      remaining: f[1]!,
      retryAfterMs: f[2]!,
      resetMs: f[3]!,
      granted: f[4]!,
      durationMs: f[5]!,
      expiresAtMs: f[6]!,
      nextAskInMs: f[7]!,
      holders: f[8]!,
    };
  }

  async giveBack(key: string, back: LeaseReturn): Promise<number> {
    const args = [back.units, wire(back.expiresAtMs), back.held, back.leaving ? 1 : 0];
    const given = numberOf(await this.caller.call('return', this.identity, key, args, back.holder));
    if (Number.isNaN(given)) throw badReply('a number of units', given);
    return given;
  }
}
