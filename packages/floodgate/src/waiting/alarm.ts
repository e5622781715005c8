import type { Clock } from '../core/clock.js';
import type { TimerHandle, Timers } from '../core/timers.js';

/**
 * Alarm is the one timer of a waiting structure: armed for a time on the clock, re-armed when
 * that time changes, disarmed when nobody waits. It calls `onRing` at or after the time it was
 * armed for, as read on the clock: a timer that fires early (a real timer against a clock of
 * another source, or a clock set back) is re-armed for the rest.
 */
export class Alarm {
  private handle: TimerHandle | undefined = undefined;
  /** The time the alarm is armed for; Infinity when disarmed. */
  private atMs = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly onRing: () => void,
  ) {}

  /** armedAtMs returns the time the alarm will ring at, or Infinity when it is disarmed. */
  get armedAtMs(): number {
    return this.atMs;
  }

  /** setAt arms the alarm for `atMs` (Infinity or NaN disarms it), replacing any earlier time. */
  setAt(atMs: number): void {
    const target = atMs < Infinity ? atMs : Infinity;
    if (target === this.atMs) return;
    if (this.handle !== undefined) this.timers.clearTimer(this.handle);
    this.handle = undefined;
    this.atMs = target;
    if (target !== Infinity) this.handle = this.timers.setTimer(this.ring, target - this.clock.now());
  }

  private readonly ring = (): void => {
    this.handle = undefined;
    const atMs = this.atMs;
    this.atMs = Infinity;
    if (this.clock.now() < atMs) {
      this.setAt(atMs);
      return;
    }
    this.onRing();
  };
}
