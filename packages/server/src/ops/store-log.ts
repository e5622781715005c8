/**
 * The log lines of a store outage: one when the store goes away (its circuits open: killed,
 * hung, unreachable), one when it is back, and the Redis client's connection errors at most one
 * line every `quietMs` (a dead Redis fails a reconnection ten times a second).
 */
import type { Logger } from 'pino';
import { Thinned } from './thinned.js';

/** StoreLogOptions configures a {@link StoreLog}. */
export interface StoreLogOptions {
  readonly log: Logger;
  /** What decides while the store is away, for the line that says it went away (`local`, `fail-open`, `fail-closed`). */
  readonly onError: string;
  /** The shortest time between two connection-error lines, in ms (default 10,000). */
  readonly quietMs?: number;
  /** The time now in ms, on a clock that never steps back. */
  readonly now: () => number;
}

/**
 * StoreLog writes a store's outages to the log: `store away` and `store back` (with how long it
 * was away and how many connection errors it had), and connection errors thinned to one line per
 * `quietMs`, each saying how many it stands for.
 *
 * @example
 * const storeLog = new StoreLog({ log, onError: 'local', now: () => performance.now() });
 * const state = new StoreState((up) => storeLog.changed(up));
 */
export class StoreLog {
  private awaySinceMs: number | undefined;
  private errorsThisOutage = 0;
  private readonly errors: Thinned;

  constructor(private readonly options: StoreLogOptions) {
    this.errors = new Thinned(options.quietMs ?? 10_000, options.now);
  }

  /** changed hears the store go away (`up` false) or come back. */
  changed(up: boolean): void {
    const { log, now } = this.options;
    if (!up && this.awaySinceMs === undefined) {
      this.awaySinceMs = now();
      this.errorsThisOutage = 0;
      log.warn(
        { onError: this.options.onError },
        `store away: its circuit opened; decisions follow onError "${this.options.onError}" until it answers again`,
      );
    } else if (up && this.awaySinceMs !== undefined) {
      const awayMs = Math.round(now() - this.awaySinceMs);
      log.info({ awayMs, connectionErrors: this.errorsThisOutage }, 'store back: deciding on it again');
      this.awaySinceMs = undefined;
    }
  }

  /** connectionError hears one error of the store's client; a line goes out at most once per `quietMs`. */
  connectionError(error: Error): void {
    this.errorsThisOutage++;
    const alsoSince = this.errors.hit();
    if (alsoSince !== undefined) this.options.log.warn({ error: error.message, alsoSince }, 'store connection error');
  }
}
