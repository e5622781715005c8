/**
 * The wait line in front of a concurrency limit: one line per priority tier, served first in,
 * first out while it drains, last in, first out (with a short timeout) while a queue stands.
 */
import { DeadlineHeap } from '../waiting/deadline-heap.js';

/** Waiter is one caller waiting for a slot; the line hands it back to be granted or shed. */
export interface Waiter {
  /** The waiter's number, unique for the line's life. */
  readonly id: number;
  /** Its priority tier (0 is served first). */
  readonly tier: number;
  /** When it joined the line, in ms. */
  readonly enqueuedMs: number;
  /** When it gives up, in ms. */
  readonly deadlineMs: number;
  /** Settles the caller's promise: granted or shed. */
  readonly settle: (granted: boolean, reason: 'queue-timeout' | 'queue-full' | 'aborted') => void;
  /** Detaches the caller's abort listener, if any. */
  detach: (() => void) | undefined;
}

/** CoDel configures the standing-queue mode of a wait line (a `ConcurrencyLimiter`'s `maxQueue` waiters). */
export interface CoDel {
  /** A line that has not been empty for this long is a standing queue, in ms. */
  readonly intervalMs: number;
  /** Longest wait in a standing queue, in ms: older waiters are shed. */
  readonly targetMs: number;
}

/**
 * WaitLine keeps the callers waiting for a slot, by tier. Without CoDel it is first in, first out
 * within a tier. With CoDel (Facebook's adaptive LIFO), a line that has not emptied within
 * `intervalMs` is a standing queue: the newest waiter is served first, since it is the one whose
 * client is still most likely there, and waiters older than `targetMs` are shed, so a burst is
 * absorbed while a standing queue never builds latency. Higher tiers are always served first.
 */
export class WaitLine {
  private readonly tiers: Waiter[][];
  private readonly heads: number[];
  /** Callers waiting in each tier. */
  private readonly live: number[];
  private readonly byId = new Map<number, Waiter>();
  private readonly deadlines = new DeadlineHeap();
  private nextId = 0;
  /** When the line was last empty, in ms. */
  private lastEmptyMs = -Infinity;

  /** Creates an empty line of `tierCount` tiers; `codel` undefined serves first in, first out. */
  constructor(
    tierCount: number,
    private readonly codel: CoDel | undefined,
  ) {
    this.tiers = Array.from({ length: tierCount }, () => []);
    this.heads = new Array<number>(tierCount).fill(0);
    this.live = new Array<number>(tierCount).fill(0);
  }

  /** size returns how many callers wait. */
  get size(): number {
    return this.byId.size;
  }

  /** waitingAtOrAbove returns whether a caller of tier `tier` or a more important one waits. */
  waitingAtOrAbove(tier: number): boolean {
    for (let t = 0; t <= tier; t++) if (this.live[t]! > 0) return true;
    return false;
  }

  /** add puts a caller in the line and returns it. */
  add(nowMs: number, tier: number, maxWaitMs: number, settle: Waiter['settle']): Waiter {
    if (this.byId.size === 0) this.lastEmptyMs = nowMs;
    const waiter: Waiter = {
      id: this.nextId++,
      tier,
      enqueuedMs: nowMs,
      deadlineMs: nowMs + maxWaitMs,
      settle,
      detach: undefined,
    };
    this.tiers[tier]!.push(waiter);
    this.live[tier]!++;
    this.byId.set(waiter.id, waiter);
    if (waiter.deadlineMs < Infinity) this.deadlines.push(waiter.deadlineMs, waiter.id);
    return waiter;
  }

  /** remove takes a caller out of the line; false when it had left already. */
  remove(waiter: Waiter): boolean {
    if (!this.byId.delete(waiter.id)) return false;
    this.live[waiter.tier]!--;
    waiter.detach?.();
    return true;
  }

  /**
   * evictBelow removes and returns the newest caller of the least important tier below `tier`
   * (tiers with a higher number), or undefined when none waits there: a full line makes room for
   * a more important caller by shedding the least important one.
   */
  evictBelow(tier: number): Waiter | undefined {
    for (let t = this.tiers.length - 1; t > tier; t--) {
      if (this.live[t] === 0) continue;
      const line = this.tiers[t]!;
      for (let i = line.length - 1; i >= this.heads[t]!; i--) {
        const waiter = line[i]!;
        if (!this.byId.has(waiter.id)) continue;
        line.splice(i, 1);
        this.remove(waiter);
        this.compactTier(t);
        return waiter;
      }
    }
    return undefined;
  }

  /** standing returns whether the line is a standing queue at `nowMs` (always false without CoDel). */
  standing(nowMs: number): boolean {
    return this.codel !== undefined && this.byId.size > 0 && nowMs - this.lastEmptyMs >= this.codel.intervalMs;
  }

  /**
   * next removes and returns the caller to serve in tier `tier` at `nowMs` (the oldest, or the
   * newest in a standing queue), or undefined when that tier is empty.
   */
  next(nowMs: number, tier: number): Waiter | undefined {
    const lifo = this.standing(nowMs);
    const line = this.tiers[tier]!;
    let waiter: Waiter | undefined;
    if (lifo) {
      while (line.length > this.heads[tier]! && waiter === undefined) {
        const last = line.pop()!;
        if (this.byId.has(last.id)) waiter = last;
      }
    } else {
      while (this.heads[tier]! < line.length && waiter === undefined) {
        const first = line[this.heads[tier]!]!;
        this.heads[tier]!++;
        if (this.byId.has(first.id)) waiter = first;
      }
    }
    if (waiter !== undefined) this.remove(waiter);
    this.compactTier(tier);
    this.markIfEmpty(nowMs);
    return waiter;
  }

  /**
   * expired removes and returns the callers out of time at `nowMs`: past their deadline, or, in a
   * standing queue, waiting longer than CoDel's target.
   */
  expired(nowMs: number): Waiter[] {
    const out: Waiter[] = [];
    while (this.deadlines.minTimeMs() <= nowMs) {
      const waiter = this.byId.get(this.deadlines.pop());
      if (waiter !== undefined && this.remove(waiter)) out.push(waiter);
    }
    if (this.codel !== undefined && this.standing(nowMs)) {
      const oldestAllowedMs = nowMs - this.codel.targetMs;
      for (const waiter of this.byId.values()) {
        // Map order is arrival order: the first young waiter ends the scan.
        if (waiter.enqueuedMs >= oldestAllowedMs) break;
        this.remove(waiter);
        out.push(waiter);
      }
    }
    if (this.deadlines.size > 2 * this.byId.size + 32) this.deadlines.compact((id) => this.byId.has(id));
    this.markIfEmpty(nowMs);
    return out;
  }

  /** nextExpiryMs returns when {@link expired} will next have someone to remove, in ms (Infinity: never). */
  nextExpiryMs(nowMs: number): number {
    let atMs = this.deadlines.minTimeMs();
    if (this.codel !== undefined && this.byId.size > 0) {
      const oldest = this.byId.values().next().value!;
      const standingFromMs = this.lastEmptyMs + this.codel.intervalMs;
      atMs = Math.min(atMs, Math.max(oldest.enqueuedMs + this.codel.targetMs, standingFromMs, nowMs));
    }
    return atMs;
  }

  private compactTier(tier: number): void {
    const head = this.heads[tier]!;
    const line = this.tiers[tier]!;
    if (head === line.length || this.live[tier] === 0) {
      line.length = 0;
      this.heads[tier] = 0;
    } else if (head > 1024 && head * 2 > line.length) {
      line.splice(0, head);
      this.heads[tier] = 0;
    }
  }

  private markIfEmpty(nowMs: number): void {
    if (this.byId.size === 0) this.lastEmptyMs = nowMs;
  }
}
