/**
 * ConcurrencyLimiter: a bulkhead (at most N calls in flight) whose N is fixed or learned, with
 * priority tiers and a bounded wait line.
 */
import {
  AdaptiveLimit,
  type AdaptiveLimitOptions,
  type AdaptiveLimitSnapshot,
  type CallOutcome,
} from '../core/adaptive/adaptive-limit.js';
import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { isTimers, systemTimers, type Timers } from '../core/timers.js';
import { positiveInteger, requireObject } from '../core/validate.js';
import { Alarm } from '../waiting/alarm.js';
import { checkMaxWaitMs, checkQueueBound, checkSignal } from '../waiting/validate.js';
import { ConcurrencyPermit, type Shed, type ShedReason } from './concurrency-permit.js';
import { TierDemand } from './tier-demand.js';
import { WaitLine, type CoDel, type Waiter } from './wait-line.js';

/** ConcurrencyLimiterOptions configures a {@link ConcurrencyLimiter}: give `limit` or `adaptive`. */
export interface ConcurrencyLimiterOptions {
  /** A fixed limit: at most this many calls in flight (a bulkhead). */
  readonly limit?: number;
  /**
   * An adaptive limit, learned from the calls' latency and drops: its options, or `true` for the
   * defaults. With more than one tier, its `queueTarget` defaults to `√limit` (see AdaptiveLimit).
   */
  readonly adaptive?: AdaptiveLimitOptions | true;
  /** Priority tiers (default 1); tier 0 is the most important. */
  readonly tiers?: number;
  /**
   * Share of the limit held back from each tier below the top, per step down (default 0.15):
   * with 3 tiers, tier 1 may fill 85% of the limit and tier 2 70%, so a saturated service sheds
   * the lowest tier first and keeps room for the top one. It binds only when the slots run out.
   * Under an adaptive limit it is the least held back: when the tiers above need more slots (their
   * arrival rate × the calls' latency, and room for their bursts), that much is held back instead.
   */
  readonly reserveRatio?: number;
  /** Most callers waiting for a slot (default 0: no waiting, shed at once). */
  readonly maxQueue?: number;
  /** Longest a caller waits for a slot, in ms (default 1000). */
  readonly maxWaitMs?: number;
  /**
   * The wait line's order: `adaptive-lifo` (default) serves first in, first out until a queue
   * stands for `codel.intervalMs`, then newest first, shedding waiters older than `codel.targetMs`;
   * `fifo` always serves the oldest.
   */
  readonly order?: 'adaptive-lifo' | 'fifo';
  /** CoDel's parameters for `adaptive-lifo`, in ms (default interval 100, target 5). */
  readonly codel?: Partial<CoDel>;
  /**
   * A second overload signal, read when each call ends: true counts the call as a drop (for
   * example: this process's event-loop delay is above a bound, so work done here is too much).
   */
  readonly pressure?: () => boolean;
  /** Source of the current time (default {@link systemClock}). */
  readonly clock?: Clock;
  /** Timers to wait on (default: the clock when it is also Timers, else {@link systemTimers}). */
  readonly timers?: Timers;
}

/** ConcurrencyAcquireOptions are the per-call options of {@link ConcurrencyLimiter.acquire}. */
export interface ConcurrencyAcquireOptions {
  /** The call's tier (default the least important): 0 is served first. */
  readonly tier?: number;
  /** Longest to wait, in ms, at most the limiter's `maxWaitMs` (default that). */
  readonly maxWaitMs?: number;
  /** Ends the wait (shed as `aborted`) when it fires. */
  readonly signal?: AbortSignal;
}

/** Admission is a slot ({@link ConcurrencyPermit}, `allowed: true`) or the reason there is none ({@link Shed}). */
export type Admission = ConcurrencyPermit | Shed;

/** ConcurrencySnapshot is a limiter's state now, for metrics. */
export interface ConcurrencySnapshot {
  readonly limit: number;
  readonly inFlight: number;
  readonly queued: number;
  /** What the adaptive estimator knows; undefined for a fixed limit. */
  readonly adaptive: AdaptiveLimitSnapshot | undefined;
}

/**
 * ConcurrencyLimiter admits at most `limit` calls at once, a fixed number or one an
 * {@link AdaptiveLimit} learns from the calls' latency. A call is given a {@link ConcurrencyPermit}
 * or a {@link Shed} answer at once, or waits in a bounded line. Each permit is released exactly
 * once, with the call's outcome.
 *
 * Priority tiers bind only under saturation: tier `t` may take a slot while fewer than
 * `limit · (1 - reserveRatio · t)` are in flight and no caller of its tier or above waits; a freed
 * slot goes to the most important waiter, and a full line sheds its least important waiter (the
 * newest of the lowest tier) to make room for a more important caller. JavaScript runs each
 * check and its count as one step, so no race can over-admit a tier.
 *
 * @example
 * const limiter = new ConcurrencyLimiter({ adaptive: { minLimit: 4 }, tiers: 2, maxQueue: 50, maxWaitMs: 100 });
 * const admission = await limiter.acquire({ tier: isHealthCheck ? 0 : 1, signal });
 * if (!admission.allowed) return respond(503, { retryAfterMs: admission.retryAfterMs });
 * try { await callService(); admission.release(); } catch { admission.release('drop'); throw ... }
 */
export class ConcurrencyLimiter {
  private readonly estimator: AdaptiveLimit | undefined;
  private readonly fixedLimit: number;
  private readonly tierCount: number;
  private readonly reserveRatio: number;
  private readonly maxQueue: number;
  private readonly maxWaitMs: number;
  private readonly pressure: (() => boolean) | undefined;
  private readonly clock: Clock;
  private readonly line: WaitLine;
  private readonly alarm: Alarm;
  /** Each tier's demand, when there are tiers and the limit is learned: what the room held back for the tiers above follows. */
  private readonly demand: TierDemand | undefined;
  private held = 0;

  /** Creates a limiter with every slot free; no timer is set until someone waits. */
  constructor(options: ConcurrencyLimiterOptions) {
    const o = requireObject<ConcurrencyLimiterOptions>(options, 'ConcurrencyLimiter');
    if ((o.limit === undefined) === (o.adaptive === undefined)) {
      throw new FloodgateError(
        'INVALID_OPTION',
        'ConcurrencyLimiter needs exactly one of limit (a fixed number) and adaptive (options or true)',
        'limit',
      );
    }
    this.fixedLimit = o.limit === undefined ? 0 : positiveInteger(o.limit, 'ConcurrencyLimiter.limit');
    this.tierCount = positiveInteger(o.tiers ?? 1, 'ConcurrencyLimiter.tiers');
    this.estimator =
      o.adaptive === undefined ? undefined : new AdaptiveLimit(adaptiveOptions(o.adaptive, this.tierCount));
    this.reserveRatio = checkReserve(o.reserveRatio, this.tierCount);
    // A learned limit follows what the tiers let through, so the room held back for the tiers
    // above can follow their demand; a fixed limit is the operator's word on the slots, and room
    // held back from it stays idle: there the reserve is reserveRatio's alone.
    this.demand = this.tierCount > 1 && this.estimator !== undefined ? new TierDemand(this.tierCount) : undefined;
    this.maxQueue = checkQueueBound(o.maxQueue, 'ConcurrencyLimiter.maxQueue', 0);
    this.maxWaitMs = checkMaxWaitMs(o.maxWaitMs ?? 1000, 'ConcurrencyLimiter.maxWaitMs');
    if (o.pressure !== undefined && typeof o.pressure !== 'function') {
      throw new FloodgateError(
        'INVALID_OPTION',
        `ConcurrencyLimiter.pressure must be a function returning a boolean, got ${describeValue(o.pressure)}`,
        'ConcurrencyLimiter.pressure',
      );
    }
    this.pressure = o.pressure;
    this.clock = o.clock ?? systemClock;
    this.line = new WaitLine(this.tierCount, checkOrder(o.order, o.codel));
    this.alarm = new Alarm(this.clock, o.timers ?? (isTimers(this.clock) ? this.clock : systemTimers), () =>
      this.serve(),
    );
  }

  /** limit returns how many calls may be in flight now (for the top tier). */
  get limit(): number {
    return this.estimator?.limit ?? this.fixedLimit;
  }

  /** inFlight returns how many calls hold a slot. */
  get inFlight(): number {
    return this.held;
  }

  /** queued returns how many callers wait for a slot. */
  get queued(): number {
    return this.line.size;
  }

  /** snapshot returns the limit, the calls in flight and waiting, and what the estimator knows. */
  snapshot(): ConcurrencySnapshot {
    return { limit: this.limit, inFlight: this.held, queued: this.line.size, adaptive: this.estimator?.snapshot() };
  }

  /** tryAcquire returns a permit when a slot is free for `tier` now, else a {@link Shed} (`limit`); it never waits. */
  tryAcquire(tier = this.tierCount - 1): Admission {
    const t = this.checkTier(tier);
    const nowMs = this.clock.now();
    this.demand?.arrived(nowMs, t);
    if (this.free(t)) return this.grant(nowMs, t);
    this.estimator?.saturated(nowMs);
    return this.shed('limit', t);
  }

  /**
   * acquire returns a permit when a slot is free for the call's tier, a {@link Shed} when the line
   * is full or not allowed, or a promise of either once it has waited. It never rejects for load:
   * bad options throw `INVALID_OPTION`.
   */
  acquire(options?: ConcurrencyAcquireOptions): Admission | Promise<Admission> {
    const tier = this.checkTier(options?.tier ?? this.tierCount - 1);
    const nowMs = this.clock.now();
    this.demand?.arrived(nowMs, tier);
    if (this.free(tier)) return this.grant(nowMs, tier);
    this.estimator?.saturated(nowMs);
    const maxWaitMs = Math.min(this.maxWaitMs, checkMaxWaitMs(options?.maxWaitMs ?? this.maxWaitMs, 'maxWaitMs'));
    if (this.maxQueue === 0 || maxWaitMs === 0) return this.shed('limit', tier);
    if (this.line.size >= this.maxQueue) {
      // A full line sheds its least important caller for a more important one, else the newcomer.
      const evicted = this.line.evictBelow(tier);
      if (evicted === undefined) return this.shed('queue-full', tier);
      evicted.settle(false, 'queue-full');
    }
    const signal = checkSignal(options?.signal, 'signal');
    if (signal?.aborted === true) return this.shed('aborted', tier);
    return this.wait(nowMs, tier, maxWaitMs, signal);
  }

  private wait(nowMs: number, tier: number, maxWaitMs: number, signal: AbortSignal | undefined): Promise<Admission> {
    return new Promise<Admission>((resolve) => {
      const waiter = this.line.add(nowMs, tier, maxWaitMs, (granted, reason) => {
        resolve(granted ? this.grant(this.clock.now(), tier) : this.shed(reason, tier));
      });
      if (signal !== undefined) {
        const onAbort = (): void => {
          if (this.line.remove(waiter)) waiter.settle(false, 'aborted');
          this.rearm();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.rearm();
    });
  }

  /** Whether tier `tier` may take a slot now: under its share of the limit, with nobody of its rank or above waiting. */
  private free(tier: number): boolean {
    return this.held < this.thresholdOf(tier) && !this.line.waitingAtOrAbove(tier);
  }

  /**
   * How many calls may be in flight for `tier` to take a slot: the limit less what is held back for
   * the tiers above (their demand, at least `reserveRatio` a step). While a probe halves the limit,
   * the top tier keeps the room its demand needs, up to the learned limit: the probe's cut falls
   * on the tiers below.
   */
  private thresholdOf(tier: number): number {
    const limit = this.limit;
    const demand = this.demand;
    if (tier === 0) {
      if (demand === undefined || this.estimator === undefined) return limit;
      return Math.max(limit, Math.min(this.estimator.learnedLimit, Math.ceil(demand.slotsAbove(1))));
    }
    const reserve = Math.max(limit * this.reserveRatio * tier, demand?.slotsAbove(tier) ?? 0);
    return Math.max(1, Math.floor(limit - reserve + 1e-9));
  }

  private grant(nowMs: number, tier: number): ConcurrencyPermit {
    this.held++;
    if (this.estimator?.probing === true) this.estimator.sent(nowMs);
    return new ConcurrencyPermit(this.releaseSlot, tier, nowMs, this.held);
  }

  private shed(reason: ShedReason, tier: number): Shed {
    const rttMs = this.estimator?.sampleRttMs;
    return { allowed: false, reason, tier, retryAfterMs: Math.max(1, Math.ceil(rttMs ?? 1)) };
  }

  private readonly releaseSlot = (permit: ConcurrencyPermit, outcome: CallOutcome): void => {
    this.held--;
    if (outcome === 'success') this.demand?.answered(this.clock.now() - permit.startMs);
    if (this.estimator !== undefined) {
      const pressed = outcome === 'success' && this.pressure?.() === true;
      const call = {
        startMs: permit.startMs,
        inFlight: permit.inFlight,
        inFlightAfter: this.held,
        outcome: pressed ? 'drop' : outcome,
      } as const;
      this.estimator.record(this.clock.now(), call);
    }
    if (this.line.size > 0) this.serve();
  };

  /** Sheds the waiters out of time, then hands free slots to waiters, most important tier first. */
  private serve(): void {
    const nowMs = this.clock.now();
    for (const waiter of this.line.expired(nowMs)) waiter.settle(false, 'queue-timeout');
    for (let tier = 0; tier < this.tierCount && this.line.size > 0; tier++) {
      while (this.held < this.thresholdOf(tier)) {
        const waiter: Waiter | undefined = this.line.next(nowMs, tier);
        if (waiter === undefined) break;
        waiter.settle(true, 'queue-timeout');
      }
    }
    this.rearm();
  }

  private rearm(): void {
    this.alarm.setAt(this.line.size > 0 ? this.line.nextExpiryMs(this.clock.now()) : Infinity);
  }

  private checkTier(tier: number): number {
    if (Number.isInteger(tier) && tier >= 0 && tier < this.tierCount) return tier;
    throw new FloodgateError(
      'INVALID_OPTION',
      `tier must be a whole number from 0 to ${this.tierCount - 1} (the limiter has ${this.tierCount} tiers), got ${describeValue(tier)}`,
      'tier',
    );
  }
}

/**
 * The estimator's options for `tiers` tiers. With more than one, the queue the limit allows at
 * the service stays `√limit` unless `queueTarget` says otherwise: a top tier whose own demand
 * comes near the slots needs that room for its bursts, and the room held back for it is idle
 * room the tiers below cannot fill, so the estimator's one call (its default on a single tier)
 * would leave slots empty and shed the top tier's bursts.
 */
function adaptiveOptions(adaptive: AdaptiveLimitOptions | true, tiers: number): AdaptiveLimitOptions {
  const options = adaptive === true ? {} : adaptive;
  // Options that are not an object go through as they are, for AdaptiveLimit to refuse.
  if (tiers === 1 || typeof options !== 'object' || options === null || options.queueTarget !== undefined)
    return options;
  return { ...options, queueTarget: Math.sqrt };
}

function checkReserve(value: unknown, tiers: number): number {
  if (value === undefined) return 0.15;
  if (typeof value === 'number' && value >= 0 && value * (tiers - 1) < 1) return value;
  throw new FloodgateError(
    'INVALID_OPTION',
    `ConcurrencyLimiter.reserveRatio must be a number from 0 with reserveRatio × (tiers - 1) below 1, got ${describeValue(value)} for ${tiers} tiers`,
    'ConcurrencyLimiter.reserveRatio',
  );
}

function checkOrder(order: unknown, codel: Partial<CoDel> | undefined): CoDel | undefined {
  if (order === 'fifo') return undefined;
  if (order !== undefined && order !== 'adaptive-lifo') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `ConcurrencyLimiter.order must be 'adaptive-lifo' or 'fifo', got ${describeValue(order)}`,
      'ConcurrencyLimiter.order',
    );
  }
  const intervalMs = checkMaxWaitMs(codel?.intervalMs ?? 100, 'ConcurrencyLimiter.codel.intervalMs');
  const targetMs = checkMaxWaitMs(codel?.targetMs ?? 5, 'ConcurrencyLimiter.codel.targetMs');
  return { intervalMs, targetMs };
}
