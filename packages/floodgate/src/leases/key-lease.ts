/**
 * KeyLease is what one node holds of one key: its unspent lease units in chunks (each with the
 * end of the lease it came from), its recent demand, and when it may next ask. It is local
 * bookkeeping with time as an argument; {@link LeasedTable} does the asking.
 */

/** LeaseChunk is the unspent part of one grant: `units` usable until `expiresAtMs` (local clock); `sharedExpiresAtMs` is the same end on the shared clock, for returns. */
export interface LeaseChunk {
  units: number;
  readonly expiresAtMs: number;
  readonly sharedExpiresAtMs: number;
}

/** DEMAND_TAU_MS is the time constant of the demand estimate, in ms: it follows a change of load within a second or two. */
export const DEMAND_TAU_MS = 1000;

/**
 * ASK_RETRY_MS is how long after a failed ask a node's requests short of units go to the
 * per-request table (its circuit and failure policy) before one asks again, in ms: a hung store
 * then costs one ask's deadline per interval, not one per waiting request.
 */
export const ASK_RETRY_MS = 100;

/** KeyLease is one key's lease state on one node. */
export class KeyLease {
  /** Unspent grants, earliest end first. */
  readonly chunks: LeaseChunk[] = [];
  /** The sum of the chunks' units. */
  balance = 0;
  /** Recent demand in units per ms (an exponentially weighted rate). */
  private rate = 0;
  private rateAtMs = -Infinity;
  /** The latest ask in flight, if any: requests short of units wait for it before asking themselves. */
  asking: Promise<void> | undefined = undefined;
  /** Until when requests short of units are refused here, without asking (the key's fair share is used up, or the policy refused). */
  quietUntilMs = -Infinity;
  /** Until when requests short of units go to the per-request table without asking (an ask just failed). */
  directUntilMs = -Infinity;
  /** What the balance was right after the latest grant: about this node's portion of the key. */
  holdTarget = 0;
  /** A smoothed round trip of the asks, in ms. */
  rttMs = 1;
  /** When the key is back to full, as the latest answer said (local clock). */
  resetAtMs = 0;
  /** The remaining the latest answer reported. */
  sharedRemaining = 0;

  /** demandAt returns the recent demand at `nowMs`, in units per ms. */
  demandAt(nowMs: number): number {
    const dt = nowMs - this.rateAtMs;
    return dt > 0 ? this.rate * Math.exp(-dt / DEMAND_TAU_MS) : this.rate;
  }

  /** demanded records a request of `cost` at `nowMs`, admitted or not. */
  demanded(cost: number, nowMs: number): void {
    this.rate = this.demandAt(nowMs) + cost / DEMAND_TAU_MS;
    if (nowMs > this.rateAtMs) this.rateAtMs = nowMs;
  }

  /** prune drops chunks whose lease has ended by `nowMs`: their units can no longer be spent. */
  prune(nowMs: number): void {
    const chunks = this.chunks;
    while (chunks.length > 0 && chunks[0]!.expiresAtMs <= nowMs) this.balance -= chunks.shift()!.units;
    if (chunks.length === 0) this.balance = 0;
  }

  /** spend takes `cost` units from the chunks that end first; the caller checked the balance. */
  spend(cost: number): void {
    let left = cost;
    const chunks = this.chunks;
    while (left > 0 && chunks.length > 0) {
      const chunk = chunks[0]!;
      const take = Math.min(chunk.units, left);
      chunk.units -= take;
      left -= take;
      if (chunk.units <= 1e-9) chunks.shift();
    }
    this.balance = chunks.length === 0 ? 0 : this.balance - cost;
  }

  /** add keeps a new grant, in order of its end. */
  add(chunk: LeaseChunk): void {
    let i = this.chunks.length;
    while (i > 0 && this.chunks[i - 1]!.expiresAtMs > chunk.expiresAtMs) i--;
    this.chunks.splice(i, 0, chunk);
    this.balance += chunk.units;
  }

  /** takeDue removes and returns the chunks due back by `nowMs` (their end less `leadMs`). */
  takeDue(nowMs: number, leadMs: number): LeaseChunk[] {
    const due: LeaseChunk[] = [];
    while (this.chunks.length > 0 && this.chunks[0]!.expiresAtMs - leadMs <= nowMs) {
      const chunk = this.chunks.shift()!;
      this.balance -= chunk.units;
      if (chunk.units > 0) due.push(chunk);
    }
    if (this.chunks.length === 0) this.balance = 0;
    return due;
  }

  /** takeAll removes and returns every chunk. */
  takeAll(): LeaseChunk[] {
    const all = this.chunks.splice(0);
    this.balance = 0;
    return all;
  }

  /** dueAtMs returns when the earliest chunk is due back (its end less `leadMs`), or Infinity. */
  dueAtMs(leadMs: number): number {
    return this.chunks.length > 0 ? this.chunks[0]!.expiresAtMs - leadMs : Infinity;
  }
}
