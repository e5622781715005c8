import type { Algorithm } from '../core/algorithm.js';
import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError } from '../core/errors.js';
import {
  askLease,
  dropExpired,
  returnLease,
  type LeaseAnswer,
  type LeaseHolder,
  type LeaseTerms,
} from '../leases/lease-ledger.js';
import {
  MARK,
  decisionToWire,
  isRequest,
  numberOf,
  policyFromIdentity,
  wire,
  type ClusterChannel,
  type ClusterNotice,
  type ClusterReply,
  type ClusterRequest,
} from './protocol.js';

/** ClusterStoreHostOptions configures a {@link ClusterStoreHost}. */
export interface ClusterStoreHostOptions {
  /** The clock every decision is made on (default the system clock): the workers' limits share it. */
  readonly clock?: Clock;
  /**
   * How often keys back at rest, with no lease out, are forgotten, in ms (default 10,000): at the
   * first call after that long, so that the host holds no timer (and never keeps a process alive).
   */
  readonly sweepMs?: number;
  /**
   * Most keys the host holds, over every policy (default 1,000,000). At the bound it forgets what is
   * at rest; if still full, a request for a new key is refused with the reason `store-full` (and
   * counted in {@link ClusterStoreHost.full}) rather than tracked, as the memory store's table does
   * without its overflow tier.
   */
  readonly maxKeys?: number;
}

/** A key's shared state: the policy's cells and its lease ledger. */
interface KeyState {
  readonly cells: Float64Array;
  readonly holders: Map<string, LeaseHolder>;
}

/** One policy's keys. */
interface PolicyKeys {
  readonly policy: Algorithm;
  readonly keys: Map<string, KeyState>;
}

/**
 * ClusterStoreHost keeps the limits of every process on one host in one place: the primary of
 * node's cluster, the process that made a set of worker threads, or a small process of its own
 * that PM2 or systemd runs beside the app. Workers reach it through a {@link ClusterStore}, which
 * decides most requests from quota leases taken here, so that a limit of 100 is 100 for the host
 * and not 100 per process.
 *
 * Every call is applied at once, in the order it arrives, on this process's clock: per-request
 * decisions with the policy's own rule, lease asks and returns with the lease ledger's
 * (`askLease`, `returnLease`), exactly as the Redis scripts apply them on Redis. Keys back at rest
 * with no lease out are forgotten every `sweepMs`.
 *
 * @example
 * import cluster from 'node:cluster';
 * import { ClusterStoreHost, serveClusterWorkers } from 'floodgate/cluster';
 * if (cluster.isPrimary) {
 *   serveClusterWorkers(new ClusterStoreHost(), cluster);
 *   for (let i = 0; i < 2; i++) cluster.fork();
 * }
 */
export class ClusterStoreHost {
  private readonly policies = new Map<string, PolicyKeys>();
  private readonly clock: Clock;
  private readonly sweepMs: number;
  private sweptAtMs = -Infinity;
  private readonly maxKeys: number;
  private held = 0;
  /** full counts the requests for a new key refused because the host held `maxKeys` keys. */
  full = 0;
  /** Where notices go: every channel attached, and every worker of a cluster served. */
  private readonly listeners = new Set<(notice: ClusterNotice) => void>();
  /** calls counts every request answered, for benchmarks and tests. */
  calls = 0;

  constructor(options: ClusterStoreHostOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.sweepMs = options.sweepMs ?? 10_000;
    this.maxKeys = options.maxKeys ?? 1_000_000;
    if (!Number.isSafeInteger(this.maxKeys) || this.maxKeys < 1)
      throw new FloodgateError(
        'INVALID_OPTION',
        `ClusterStoreHost.maxKeys must be a whole number of at least 1, got ${String(options.maxKeys)}`,
        'maxKeys',
      );
    if (!(this.sweepMs > 0))
      throw new FloodgateError(
        'INVALID_OPTION',
        `ClusterStoreHost.sweepMs must be above 0, got ${String(options.sweepMs)}`,
        'sweepMs',
      );
  }

  /** keys returns how many keys the host holds state for now. */
  get keys(): number {
    return this.held;
  }

  /**
   * attach answers every floodgate request that arrives on `channel` (anything else on it is left
   * alone) and returns a function that stops.
   */
  attach(channel: ClusterChannel): () => void {
    const stop = channel.onMessage((message) => {
      if (isRequest(message)) channel.send(this.answer(message));
    });
    const stopNotices = this.onNotice((notice) => channel.send(notice));
    return () => {
      stop();
      stopNotices();
    };
  }

  /**
   * onNotice hears what every worker must be told after a call: a key reset, or units refunded (so
   * that a worker refusing the key locally asks again). Returns a function that stops.
   */
  onNotice(listener: (notice: ClusterNotice) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** answer applies one request and returns its reply; a request it cannot apply is answered with a typed error. */
  answer(request: ClusterRequest): ClusterReply {
    this.calls++;
    try {
      const reply: ClusterReply = { m: MARK, id: request.id, value: this.apply(request) };
      if (request.op === 'reset' || request.op === 'refund') {
        const notice: ClusterNotice = { m: MARK, notice: request.op, policy: request.policy, key: request.key };
        for (const l of this.listeners) l(notice);
      }
      return reply;
    } catch (err) {
      const e = err instanceof FloodgateError ? err : new FloodgateError('STORE_ERROR', String(err), 'store');
      return { m: MARK, id: request.id, error: { code: e.code, message: e.message } };
    }
  }

  /** close forgets every key; the host keeps answering (afresh) until its channels are let go. */
  close(): void {
    this.policies.clear();
    this.held = 0;
  }

  /**
   * The answer to a request for a new key while the host is full: a peek answers as for a fresh key;
   * a consume, reserve or lease ask is refused (`store-full`, retry in a second); a refund or return
   * has nothing to give back to.
   */
  private refusedFull(policy: Algorithm, r: ClusterRequest, nowMs: number): unknown {
    if (r.op === 'refund') return undefined;
    if (r.op === 'return') return 0;
    const fresh = new Float64Array(policy.width);
    policy.init(fresh, 0, nowMs);
    if (r.op === 'peek') return decisionToWire(policy.peek(fresh, 0, nowMs, numberOf(r.args[0])));
    this.full++;
    if (r.op === 'reserve') return -1;
    if (r.op === 'ask') return [0, 0, FULL_RETRY_MS, 0, 0, 0, nowMs, FULL_RETRY_MS, 0];
    return decisionToWire({
      allowed: false,
      limit: policy.limit,
      remaining: 0,
      retryAfterMs: FULL_RETRY_MS,
      resetMs: 0,
      reason: 'store-full',
    });
  }

  private apply(r: ClusterRequest): unknown {
    if (typeof r.key !== 'string' || r.key.length === 0 || !Array.isArray(r.args))
      throw new FloodgateError('INVALID_KEY', 'a cluster store request needs a non-empty key and its args', 'key');
    const { policy, keys } = this.policyOf(r.policy);
    const nowMs = this.clock.now();
    if (nowMs - this.sweptAtMs >= this.sweepMs) this.sweep();
    if (r.op === 'reset') return void (keys.delete(r.key) && this.held--);
    // A return to a key the host no longer holds gives nothing back: its lease has ended (and its
    // state was at rest). Made afresh, the key would only be kept until the next sweep.
    if (r.op === 'return' && !keys.has(r.key)) return 0;
    const n = r.args.map(numberOf);
    const cost = n[0]!;
    if (!keys.has(r.key) && this.held >= this.maxKeys) {
      this.sweep();
      if (this.held >= this.maxKeys) return this.refusedFull(policy, r, nowMs);
    }
    const state = this.stateOf(policy, keys, r.key, nowMs);
    switch (r.op) {
      case 'consume':
      case 'peek':
        policy.checkCost(cost);
        return decisionToWire(policy[r.op](state.cells, 0, nowMs, cost));
      case 'refund':
        policy.checkCost(cost);
        return void policy.refund(state.cells, 0, nowMs, cost);
      case 'reserve':
        policy.checkCost(cost);
        if (policy.reserve === undefined)
          throw new FloodgateError('INVALID_OPTION', `${policy.name} cannot book future turns`, 'policy');
        return wire(policy.reserve(state.cells, 0, nowMs, cost, n[1]!));
      case 'ask':
        return askOf(policy, state, r, n, nowMs);
      case 'return':
        return returnLease(
          policy,
          state.cells,
          0,
          state.holders,
          { holder: holderOf(r), units: n[0]!, expiresAtMs: n[1]!, held: n[2]!, leaving: n[3] === 1 },
          nowMs,
        );
      default:
        throw new FloodgateError('STORE_ERROR', `unknown cluster store operation ${JSON.stringify(r.op)}`, 'store');
    }
  }

  private policyOf(identity: string): PolicyKeys {
    let p = this.policies.get(identity);
    if (p === undefined) {
      p = { policy: policyFromIdentity(String(identity)), keys: new Map() };
      this.policies.set(identity, p);
    }
    return p;
  }

  /** The key's state now: made fresh when new, or when at rest (as Redis's expiry would). */
  private stateOf(policy: Algorithm, keys: Map<string, KeyState>, key: string, nowMs: number): KeyState {
    let state = keys.get(key);
    if (state === undefined) {
      state = { cells: new Float64Array(policy.width), holders: new Map() };
      policy.init(state.cells, 0, nowMs);
      keys.set(key, state);
      this.held++;
    } else if (state.holders.size === 0 && policy.restAtMs(state.cells, 0) <= nowMs) {
      policy.init(state.cells, 0, nowMs);
    }
    return state;
  }

  /** sweep forgets every key at rest with no lease out: it would answer as a fresh key. */
  sweep(): void {
    const nowMs = this.clock.now();
    this.sweptAtMs = nowMs;
    for (const { policy, keys } of this.policies.values()) {
      for (const [key, state] of keys) {
        dropExpired(state.holders, nowMs);
        if (state.holders.size === 0 && policy.restAtMs(state.cells, 0) <= nowMs) {
          keys.delete(key);
          this.held--;
        }
      }
    }
  }
}

/** How long a request refused for a full host is told to wait, in ms. */
const FULL_RETRY_MS = 1000;

/** The ask's answer as the Redis lease script returns it: nine numbers. */
function askOf(policy: Algorithm, state: KeyState, r: ClusterRequest, n: readonly number[], nowMs: number): unknown {
  const terms: LeaseTerms = { maxOutstanding: n[4]!, leaseMs: n[5]!, ratePerMs: n[6]!, windowMs: n[7]! };
  if (!(terms.maxOutstanding >= 1 && terms.leaseMs >= 1 && terms.ratePerMs > 0 && terms.windowMs >= 0))
    throw new FloodgateError('STORE_ERROR', `a lease ask's terms are out of range: ${JSON.stringify(r.args)}`, 'store');
  if (n[3]! > 0) policy.checkCost(n[3]!);
  let a = askLease(
    policy,
    state.cells,
    0,
    state.holders,
    { holder: holderOf(r), demand: n[0]!, held: n[1]!, wanted: n[2]!, spend: n[3]! },
    nowMs,
    terms,
  );
  if (n[3]! > 0 && !a.spent) a = { ...a, ...spendOnItsOwn(policy, state.cells, n[3]!, nowMs) };
  a = { ...a, nextAskInMs: nextAskOf(policy, state.cells, nowMs) };
  return [
    a.spent ? 1 : 0,
    a.remaining,
    a.retryAfterMs,
    a.resetMs,
    a.granted,
    a.durationMs,
    a.expiresAtMs,
    a.nextAskInMs,
    a.holders,
  ].map(wire);
}

/**
 * spendOnItsOwn decides a request the ledger held back as a per-request decision would. The ledger
 * refuses a holder whose fair-share credit is used up while the key is contended, so that one node
 * of a fleet cannot take the others' share; the workers of one host serve one app, and the host's
 * limit is what counts. So a request is refused here only when the policy refuses it, and then
 * says when the policy would admit it.
 */
function spendOnItsOwn(
  policy: Algorithm,
  cells: Float64Array,
  cost: number,
  nowMs: number,
): Pick<LeaseAnswer, 'spent' | 'remaining' | 'retryAfterMs' | 'resetMs'> {
  const d = policy.consume(cells, 0, nowMs, cost);
  return {
    spent: d.allowed,
    remaining: d.remaining,
    retryAfterMs: d.retryAfterMs,
    resetMs: d.resetMs,
  };
}

/**
 * nextAskOf is when a worker short of units should ask again: at once while the policy has a unit
 * left (its request is then decided exactly), else when the policy admits one again. The ledger's
 * own answer spaces a contended holder's asks by its fair-share credit, which would refuse requests
 * the host's limit still has room for.
 */
function nextAskOf(policy: Algorithm, cells: Float64Array, nowMs: number): number {
  const next = policy.peek(cells, 0, nowMs, Math.min(1, policy.limit));
  return next.allowed ? 0 : next.retryAfterMs;
}

function holderOf(r: ClusterRequest): string {
  if (typeof r.holder !== 'string' || r.holder.length === 0)
    throw new FloodgateError('STORE_ERROR', 'a lease call needs its holder', 'store');
  return r.holder;
}
