/**
 * When the quota service works a bucket's shares out again: a pass over a bucket runs a delay after
 * it is asked for (joins and leaves within the delay are one pass), one at a time per bucket; and
 * which buckets have a client of this replica granted nothing, to which a share freed is pushed at
 * once rather than at its next report.
 */
import type { TimerHandle, Timers } from 'floodgate';

/** PassOptions configure {@link Passes}. */
export interface PassOptions {
  readonly timers: Timers;
  /** How long after it is asked for a pass runs, in ms. */
  readonly delayMs: number;
  /** run works bucket `key`'s shares out again and sends the changes. */
  run(key: string): Promise<void>;
  /** serves returns whether a client of this replica reports bucket `key` (a pass over no client is not run). */
  serves(key: string): boolean;
  /** failed hears a pass that failed (it is not retried: the clients' next reports grant them anew). */
  failed(error: unknown): void;
}

/** Passes schedules the redistribution passes of one service, and counts its clients granted nothing per bucket. */
export class Passes {
  private readonly timersOut = new Map<string, TimerHandle>();
  /** The buckets with a pass out, each with whether another was asked for meanwhile. */
  private readonly running = new Map<string, boolean>();
  private readonly starving = new Map<string, number>();

  constructor(private readonly options: PassOptions) {}

  /**
   * ask runs a pass over bucket `key` after the delay, one at a time per bucket: a pass asked for
   * while one is out (a slow Redis) runs once after it, so passes never pile up behind each other.
   */
  ask(key: string): void {
    if (this.running.has(key)) {
      this.running.set(key, true);
      return;
    }
    if (this.timersOut.has(key) || !this.options.serves(key)) return;
    const timer = this.options.timers.setTimer(() => {
      this.timersOut.delete(key);
      this.running.set(key, false);
      void this.options
        .run(key)
        .catch((error: unknown) => this.options.failed(error))
        .finally(() => {
          const again = this.running.get(key) === true;
          this.running.delete(key);
          if (again) this.ask(key);
        });
    }, this.options.delayMs);
    this.timersOut.set(key, timer);
  }

  /** starve counts `by` (+1 or -1) more clients of this replica granted nothing in bucket `key`. */
  starve(key: string, by: number): void {
    const count = (this.starving.get(key) ?? 0) + by;
    if (count > 0) this.starving.set(key, count);
    else this.starving.delete(key);
  }

  /** starves returns whether a client of this replica holds nothing in bucket `key`. */
  starves(key: string): boolean {
    return this.starving.has(key);
  }

  /** close stops the passes waiting to run. */
  close(): void {
    for (const timer of this.timersOut.values()) this.options.timers.clearTimer(timer);
    this.timersOut.clear();
  }
}
