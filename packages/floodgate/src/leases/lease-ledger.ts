/**
 * The accounting of quota leases on one shared key, as pure state transitions with time as an
 * argument: what a node may take from the policy's shared state, how much it may hold, and what
 * comes back. The Redis lease script (`stores/redis/scripts/lease.ts`) restates these rules
 * operation for operation; a differential test keeps the two identical.
 *
 * A lease is units taken from the policy's own state (its `consume`), so every admitted unit was
 * counted by the policy before it was admitted, and no unit is ever granted twice. The units are
 * spent later, on the node, up to the lease's end: that lag is the only over-admission, and it is
 * bounded by what can be outstanding at once ({@link LeaseTerms.maxOutstanding} units). Unspent
 * units go back through the policy's `refund` while the lease still runs.
 */
import type { Algorithm } from '../core/algorithm.js';
import { countSlack } from '../core/algorithm.js';
import type { Decision } from '../core/decision.js';

/**
 * LeaseHolder is one node's record on a key: its demand (units per second × 1000, a whole number,
 * so sums are exact in any order), the units it holds (as it last said, plus what it was granted
 * since), when the record ends (ms, the shared clock), and its fair-share credit (units) as of
 * `creditAtMs`.
 */
export interface LeaseHolder {
  demand: number;
  held: number;
  expiresAtMs: number;
  credit: number;
  creditAtMs: number;
}

/**
 * LeaseTerms are a key's lease settings as the ledger takes them: `maxOutstanding` (whole units:
 * the most all holders may hold at once, and the over-admission bound), `leaseMs` (how long a
 * grant lasts), `ratePerMs` (the policy's sustained rate: `limit / windowMs`, what the credits of
 * all holders refill at together) and `windowMs` (a fixed window's length, whose end also ends a
 * lease; 0 for buckets).
 */
export interface LeaseTerms {
  readonly maxOutstanding: number;
  readonly leaseMs: number;
  readonly ratePerMs: number;
  readonly windowMs: number;
}

/**
 * LeaseAsk is one node's request: its demand (units/s × 1000, whole), the units it holds now,
 * how many more it would like (`wanted`), and the cost of a request it is holding back for want of
 * units (`spend`, 0 when it is renewing ahead of need), admitted or refused by this very ask.
 */
export interface LeaseAsk {
  readonly holder: string;
  readonly demand: number;
  readonly held: number;
  readonly wanted: number;
  readonly spend: number;
}

/**
 * LeaseAnswer is the ledger's answer to a {@link LeaseAsk}: whether `spend` was admitted (with the
 * policy's decision fields for it), the units granted, how long they last (`durationMs`, until
 * `expiresAtMs` on the shared clock), how long the node should wait before asking again ahead of
 * need (`nextAskInMs`: 0 unless the key is contended and its fair share is used up), and how many
 * holders the key has.
 */
export interface LeaseAnswer {
  readonly spent: boolean;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetMs: number;
  readonly granted: number;
  readonly durationMs: number;
  readonly expiresAtMs: number;
  readonly nextAskInMs: number;
  readonly holders: number;
}

/** LeaseReturn gives `units` of a lease ending at `expiresAtMs` back; `held` is what the holder keeps; `leaving` ends its record. */
export interface LeaseReturn {
  readonly holder: string;
  readonly units: number;
  readonly expiresAtMs: number;
  readonly held: number;
  readonly leaving: boolean;
}

/**
 * A key is contended when fewer than this many times `maxOutstanding` units are left: from then
 * on each holder takes only as fast as its credit (its demand's share of the policy's rate) allows.
 */
export const CONTENDED_MULTIPLE = 2;

/**
 * Under contention a holder is told to come back once its credit has refilled to this share of its
 * portion: grants of most of a portion (few round trips).
 */
export const NEXT_ASK_CREDIT = 0.75;

/**
 * A holder's credit saves up to this many portions (a new holder starts with one), so that an ask
 * delayed by a slow round trip or a busy process loses none of its share of the rate.
 */
export const CREDIT_PORTIONS = 4;

/** dropExpired removes the holders whose record ended at or before `nowMs`. */
export function dropExpired(holders: Map<string, LeaseHolder>, nowMs: number): void {
  for (const [id, h] of holders) if (h.expiresAtMs <= nowMs) holders.delete(id);
}

/**
 * askLease applies one {@link LeaseAsk} to a key: the policy's state in `cells` at `at` (already
 * initialised) and its holders. It mutates both, as an algorithm mutates its cells, and returns the
 * answer.
 *
 * The rules, in order:
 * 1. Holders whose record ended are dropped: their units count as spent, their share goes back.
 * 2. The asker's share is its demand over the sum of every holder's (equal shares when nobody
 *    reports demand). Its portion is that share of `maxOutstanding`: the most it may hold.
 * 3. Its credit refills at its share of the policy's rate, up to max(4 portions, spend, 1); a new
 *    holder starts with max(portion, spend, 1).
 * 4. When the key is contended ({@link CONTENDED_MULTIPLE}), `spend` needs credit for it; else
 *    only the policy decides it. A holder with no credit waits for it, never forever: its credit
 *    reaches at least one unit.
 * 5. Units granted: at most `wanted`, the asker's portion less what it holds, what all holders
 *    may still hold (`maxOutstanding` less their holdings), what the policy has left, and, when
 *    contended, the credit left. Nothing is granted when `spend` was refused.
 * 6. The grant lasts `leaseMs`, and never past the end of a fixed window.
 */
export function askLease(
  algorithm: Algorithm,
  cells: Float64Array,
  at: number,
  holders: Map<string, LeaseHolder>,
  ask: LeaseAsk,
  nowMs: number,
  terms: LeaseTerms,
): LeaseAnswer {
  dropExpired(holders, nowMs);
  let me = holders.get(ask.holder);
  if (me === undefined) {
    me = { demand: 0, held: 0, expiresAtMs: nowMs, credit: -1, creditAtMs: nowMs };
    holders.set(ask.holder, me);
  }
  me.demand = ask.demand;
  me.held = ask.held;
  let total = 0;
  let othersHeld = 0;
  for (const [id, h] of holders) {
    total += h.demand;
    if (id !== ask.holder) othersHeld += h.held;
  }
  const share = total > 0 ? me.demand / total : 1 / holders.size;
  const portion = terms.maxOutstanding * share;
  const creditCap = Math.max(CREDIT_PORTIONS * portion, ask.spend, 1);
  const creditPerMs = terms.ratePerMs * share;
  refillCredit(me, nowMs, creditCap, creditPerMs, Math.max(portion, ask.spend, 1));
  const slack = countSlack(algorithm.limit);
  const contended = algorithm.peek(cells, at, nowMs, 0).remaining < CONTENDED_MULTIPLE * terms.maxOutstanding;
  let d: Decision | undefined;
  let spent = false;
  let creditWaitMs = 0;
  if (ask.spend > 0) {
    if (contended && me.credit + slack < ask.spend) {
      d = algorithm.peek(cells, at, nowMs, ask.spend);
      creditWaitMs = creditPerMs > 0 ? (ask.spend - me.credit) / creditPerMs : Infinity;
    } else {
      d = algorithm.consume(cells, at, nowMs, ask.spend);
      spent = d.allowed;
      if (spent) me.credit = Math.max(0, me.credit - ask.spend);
    }
  }
  let granted = 0;
  if (ask.spend === 0 || spent) {
    const left = algorithm.peek(cells, at, nowMs, 0).remaining;
    let room = Math.min(ask.wanted, portion - ask.held, terms.maxOutstanding - othersHeld - ask.held, left);
    if (contended) room = Math.min(room, me.credit);
    granted = room > 0 ? Math.floor(room + slack) : 0;
    if (granted > 0 && algorithm.consume(cells, at, nowMs, granted).allowed) {
      me.credit = Math.max(0, me.credit - granted);
      me.held = ask.held + granted;
    } else granted = 0;
  }
  const durationMs = leaseDurationMs(terms, nowMs);
  me.expiresAtMs = Math.max(me.expiresAtMs, nowMs + terms.leaseMs);
  const after = d ?? algorithm.peek(cells, at, nowMs, 0);
  let nextAskInMs = 0;
  // Back when its credit, or what the policy has left if less, would pay for most of a portion.
  const usable = Math.min(me.credit, algorithm.peek(cells, at, nowMs, 0).remaining);
  if (contended && creditPerMs > 0)
    nextAskInMs = Math.max(0, (NEXT_ASK_CREDIT * Math.max(portion, 1) - usable) / creditPerMs);
  return {
    spent,
    remaining: after.remaining,
    retryAfterMs: spent ? 0 : Math.ceil(Math.max(after.retryAfterMs, creditWaitMs)),
    resetMs: after.resetMs,
    granted,
    durationMs,
    expiresAtMs: nowMs + durationMs,
    nextAskInMs: Math.ceil(nextAskInMs),
    holders: holders.size,
  };
}

/**
 * returnLease gives `back.units` back to the policy through its `refund` when the lease they came
 * from has not ended (`nowMs` before `back.expiresAtMs`: a late return, after a fixed window has
 * turned, would give units to a window they were never taken from), and records what the holder
 * keeps; a leaving holder's record ends. It returns the units given back.
 */
export function returnLease(
  algorithm: Algorithm,
  cells: Float64Array,
  at: number,
  holders: Map<string, LeaseHolder>,
  back: LeaseReturn,
  nowMs: number,
): number {
  dropExpired(holders, nowMs);
  const given = back.units > 0 && nowMs < back.expiresAtMs ? back.units : 0;
  if (given > 0) algorithm.refund(cells, at, nowMs, given);
  const me = holders.get(back.holder);
  if (me !== undefined) {
    if (back.leaving) holders.delete(back.holder);
    else me.held = back.held;
  }
  return given;
}

/** leaseDurationMs returns how long a grant made at `nowMs` lasts: `leaseMs`, cut at the end of a fixed window. */
export function leaseDurationMs(terms: LeaseTerms, nowMs: number): number {
  if (terms.windowMs <= 0) return terms.leaseMs;
  const endMs = Math.floor(nowMs / terms.windowMs) * terms.windowMs + terms.windowMs;
  return Math.min(terms.leaseMs, endMs - nowMs);
}

/** refillCredit brings a holder's credit up to `nowMs` (a clock gone back adds nothing); a new holder starts with `initial`. */
function refillCredit(me: LeaseHolder, nowMs: number, capacity: number, perMs: number, initial: number): void {
  if (me.credit < 0) me.credit = initial;
  else me.credit = Math.min(capacity, me.credit + Math.max(0, nowMs - me.creditAtMs) * perMs);
  me.creditAtMs = Math.max(me.creditAtMs, nowMs);
}
