import { systemClock, type Clock } from '../core/clock.js';
import { ceilMs } from '../core/decision.js';
import { FloodgateError, describeValue } from '../core/errors.js';
import { positiveNumber, requireObject } from '../core/validate.js';
import { checkQueueBound } from './validate.js';

/** LeakyGateOptions configures a {@link LeakyGate}. */
export interface LeakyGateOptions {
  /** Time between two callers' turns, in ms (fractions allowed): 1000 / intervalMs callers a second go through. */
  intervalMs: number;
  /**
   * Most callers that may be waiting for their turn at once: a whole number of at least 0 (0: a
   * caller goes through now or is refused), or Infinity.
   */
  capacity: number;
  /** Source of the current time when {@link LeakyGate.admit} is called without one (default {@link systemClock}). */
  clock?: Clock;
}

/**
 * GateTicket is the answer of {@link LeakyGate.admit}: wait `waitMs` (0: go now) and then
 * proceed, or give up because too many already wait (`rejected`, with the ms until a place
 * frees up, at least 1, for a `Retry-After`).
 */
export type GateTicket =
  { readonly rejected: false; readonly waitMs: number } | { readonly rejected: true; readonly retryAfterMs: number };

/**
 * LeakyGate is the leaky bucket as a queue for callers that wait themselves: a gateway's request
 * handlers, or threads of work. Each caller is given its turn, one every `intervalMs` in arrival
 * order, and told how long to wait for it; when `capacity` callers are already waiting, the next
 * is refused at once (a gateway answers 503), rather than made to wait past what the bucket holds.
 *
 * It holds two numbers and no timer. A caller needs no release when its wait is over: the
 * callers still waiting are counted from the clock (those whose turn is still ahead), so a caller
 * that dies while waiting cannot leak a place. A caller that gives up still leaves its turn
 * unused: the turns of those behind it were handed out already.
 *
 * A clock that goes back moves every turn back with it: the waits handed out later stay as long
 * as they would have been.
 *
 * @example
 * const gate = new LeakyGate({ intervalMs: 20, capacity: 100 });   // 50 a second, 100 waiting at most
 * const ticket = gate.admit();
 * if (ticket.rejected) return reply(503, { 'retry-after': Math.ceil(ticket.retryAfterMs / 1000) });
 * await sleep(ticket.waitMs);
 * return handle(request);
 */
export class LeakyGate {
  private readonly intervalMs: number;
  private readonly capacity: number;
  private readonly clock: Clock;
  /** The latest turn handed out; -Infinity before the first. */
  private lastTurnMs = -Infinity;
  private lastNowMs = -Infinity;

  constructor(options: LeakyGateOptions) {
    const o = requireObject<LeakyGateOptions>(options, 'LeakyGate');
    this.intervalMs = positiveNumber(o.intervalMs, 'LeakyGate.intervalMs');
    if (o.capacity === undefined) {
      throw new FloodgateError(
        'INVALID_OPTION',
        'LeakyGate.capacity is required: the most callers that may wait, e.g. 100',
        'LeakyGate.capacity',
      );
    }
    this.capacity = checkQueueBound(o.capacity, 'LeakyGate.capacity', 0);
    this.clock = o.clock ?? systemClock;
  }

  /**
   * admit gives the caller arriving at `nowMs` (default: the clock's time) its turn and returns
   * how long to wait for it, in whole ms rounded up; or refuses it, taking no turn, when
   * `capacity` callers are already waiting. A caller whose turn is now always goes through.
   */
  admit(nowMs: number = this.clock.now()): GateTicket {
    this.follow(nowMs);
    const turnMs = Math.max(nowMs, this.lastTurnMs + this.intervalMs);
    const waiting = this.waitingAt(nowMs);
    if (turnMs > nowMs && waiting >= this.capacity) {
      // The earliest turn still ahead: when it comes, its caller stops waiting and a place frees up.
      const firstTurnMs = this.lastTurnMs - (waiting - 1) * this.intervalMs;
      return { rejected: true, retryAfterMs: Math.max(1, ceilMs(firstTurnMs - nowMs)) };
    }
    this.lastTurnMs = turnMs;
    return { rejected: false, waitMs: ceilMs(turnMs - nowMs) };
  }

  /**
   * waitingAt returns how many callers admitted so far are still waiting for their turn at
   * `nowMs` (default: the clock's time). Turns are `intervalMs` apart back from the latest, so
   * those still ahead are counted, not tracked.
   */
  waitingAt(nowMs: number = this.clock.now()): number {
    this.follow(nowMs);
    const aheadMs = this.lastTurnMs - nowMs;
    // A turn exactly at nowMs is not waiting; 1e-9 keeps float noise from counting it.
    return aheadMs > 0 ? Math.ceil(aheadMs / this.intervalMs - 1e-9) : 0;
  }

  private follow(nowMs: number): void {
    if (!Number.isFinite(nowMs)) {
      throw new FloodgateError(
        'INVALID_OPTION',
        `LeakyGate: nowMs must be a finite number of ms, got ${describeValue(nowMs)}`,
        'nowMs',
      );
    }
    if (nowMs < this.lastNowMs) this.lastTurnMs -= this.lastNowMs - nowMs;
    this.lastNowMs = nowMs;
  }
}
