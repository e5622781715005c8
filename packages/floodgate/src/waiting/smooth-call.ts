/** SmoothCallKind names what a call of a {@link RedisSmoothLimiter} asks the script for. */
export type SmoothCallKind = 'reserve' | 'tryReserve' | 'acquire' | 'tryAcquire' | 'setRate' | 'getRate' | 'release';

/** Booking is what a client keeps of a reservation to release it: the version of the state it left (Redis keeps the rest). */
export interface Booking {
  readonly version: number;
}

/**
 * SmoothCall is one call of a {@link RedisSmoothLimiter} from the moment it is made until it
 * settles: sent in a batch, then (for an acquire) waiting in this process's line until its
 * reservation is due.
 */
export interface SmoothCall {
  readonly kind: SmoothCallKind;
  readonly seq: number;
  readonly permits: number;
  /** The longest wait it may reserve, in whole µs; undefined: any (a plain reserve or acquire). */
  readonly timeoutMicros: bigint | undefined;
  /** The rate of a setRate. */
  readonly rate: number;
  /** The reservation a release gives back. */
  readonly release: Booking | undefined;
  /** When the caller gives up, on the local clock (Infinity: never). */
  readonly deadlineMs: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  settled: boolean;
  /** Its reservation once Redis made it; released if the caller gives up before it is due. */
  booking: Booking | undefined;
  /** The reservation's wait as Redis (or the failure policy) answered it, in µs. */
  waitMicros: number;
  /** When it may go, on the local clock: never before an earlier call of this process. */
  wakeAtMs: number;
  /** True while it waits in this process's {@link WakeLine}. */
  inLine: boolean;
  /** While its script, cut off at the store's deadline, may still answer: the cut-off's error, for `onError` should no answer come. */
  doubt: Error | undefined;
}

/** isTry returns whether `call` may be refused instead of waiting past its timeout. */
export function isTry(call: SmoothCall): boolean {
  return call.kind === 'tryReserve' || call.kind === 'tryAcquire';
}

/** waits returns whether `call` sleeps in this process's line until its reservation is due. */
export function waits(call: SmoothCall): boolean {
  return call.kind === 'acquire' || call.kind === 'tryAcquire';
}

/** pushOpArgs appends `call` to `args` as the script's four operation slots. */
export function pushOpArgs(args: string[], call: SmoothCall): void {
  switch (call.kind) {
    case 'setRate':
      args.push('s', String(call.rate), '', '');
      return;
    case 'getRate':
      args.push('g', '', '', '');
      return;
    case 'release':
      args.push('x', String(call.release!.version), '', '');
      return;
    default:
      args.push('r', String(call.permits), call.timeoutMicros === undefined ? '' : String(call.timeoutMicros), '');
  }
}

/**
 * WakeLine is this process's line of acquires waiting for their reservations to come due, in the
 * order Redis made them: a call never goes before one made earlier (its wake time is raised to the
 * earlier one's), so callers of one process are served first in, first out.
 */
export class WakeLine {
  private entries: SmoothCall[] = [];
  private head = 0;
  private lastWakeAtMs = -Infinity;
  private count = 0;

  /** push adds `call` at the end, due at `wakeAtMs` or when the call before it is, whichever is later. */
  push(call: SmoothCall, wakeAtMs: number): void {
    this.lastWakeAtMs = Math.max(this.lastWakeAtMs, wakeAtMs);
    call.wakeAtMs = this.lastWakeAtMs;
    call.inLine = true;
    this.count++;
    this.entries.push(call);
  }

  /** left takes `call` out of the count as it settles (its entry is skipped when it surfaces). */
  left(call: SmoothCall): void {
    if (!call.inLine) return;
    call.inLine = false;
    this.count--;
  }

  /** empty is true when no unsettled call waits. */
  get empty(): boolean {
    this.skipSettled();
    return this.head === this.entries.length;
  }

  /** live returns how many unsettled calls wait. */
  get live(): number {
    return this.count;
  }

  /** nextWakeAtMs returns when the first unsettled call is due, or Infinity. */
  nextWakeAtMs(): number {
    this.skipSettled();
    return this.head < this.entries.length ? this.entries[this.head]!.wakeAtMs : Infinity;
  }

  /** takeDue removes and returns the calls due at `nowMs`, in line order. */
  takeDue(nowMs: number): SmoothCall[] {
    const due: SmoothCall[] = [];
    this.skipSettled();
    while (this.head < this.entries.length && this.entries[this.head]!.wakeAtMs <= nowMs) {
      const call = this.entries[this.head++]!;
      if (!call.settled) due.push(call);
      this.skipSettled();
    }
    return due;
  }

  private skipSettled(): void {
    while (this.head < this.entries.length && this.entries[this.head]!.settled) this.head++;
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}
