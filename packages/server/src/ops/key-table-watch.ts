/**
 * Watching the memory store's key table at its `maxKeys` bound. There, a new key is decided by
 * the overflow sketch, which can only over-count, and its refusals look like any `limited`: the
 * table deciding in silence. This counts them (`floodgate_store_overflow_total`, by result) and
 * says so in the log: a line when the table is first full, one at most every `quietMs` while it
 * stays so, with the counts, and one when it has had room for a whole period again.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { Thinned } from './thinned.js';

/** OverflowCounts are a store's counts since its tables were made: requests of new keys a full table could not hold, and those refused. */
export interface OverflowCounts {
  readonly decided: number;
  readonly refused: number;
}

/** KeyTableWatchOptions configures a {@link KeyTableWatch}. */
export interface KeyTableWatchOptions {
  /** Reads the store's counts; they may go down when a reload drops a table (then they count afresh). */
  readonly read: () => OverflowCounts;
  readonly log: Logger;
  readonly registry: Registry;
  /** The store's bound, for the log line. */
  readonly maxKeys: number;
  /** The shortest time between two "still full" lines, in ms (default 60,000). */
  readonly quietMs?: number;
  readonly now: () => number;
}

/**
 * KeyTableWatch turns the store's overflow counts into a metric and log lines; {@link KeyTableWatch.poll}
 * reads them (the gateway calls it on a timer, and each scrape does).
 *
 * @example
 * const watch = new KeyTableWatch({ read: () => store.overflowCounts(), log, registry, maxKeys, now: () => performance.now() });
 * setInterval(() => watch.poll(), 5000).unref();
 */
export class KeyTableWatch {
  private last: OverflowCounts = { decided: 0, refused: 0 };
  private full = false;
  private readonly stillFull: Thinned;
  private readonly counter: Counter;

  constructor(private readonly options: KeyTableWatchOptions) {
    this.stillFull = new Thinned(options.quietMs ?? 60_000, options.now);
    this.counter = new Counter({
      name: 'floodgate_store_overflow_total',
      help: 'Requests of new keys the memory store could not hold at its maxKeys bound, by result (admitted, refused): decided by the overflow sketch, which can only over-count, so a refused one may be within its limit. Raise store.maxKeys when it grows.',
      labelNames: ['result'],
      registers: [options.registry],
      collect: (): void => this.poll(),
    });
    this.counter.inc({ result: 'admitted' }, 0);
    this.counter.inc({ result: 'refused' }, 0);
  }

  /** poll reads the counts, adds what is new to the metric, and logs a change of state. */
  poll(): void {
    const now = this.options.read();
    // A table dropped by a reload takes its counts with it: count from the new figures.
    const decided = now.decided >= this.last.decided ? now.decided - this.last.decided : now.decided;
    const refused = now.refused >= this.last.refused ? now.refused - this.last.refused : now.refused;
    this.last = now;
    if (decided > 0) {
      this.counter.inc({ result: 'admitted' }, decided - refused);
      if (refused > 0) this.counter.inc({ result: 'refused' }, refused);
    }
    const { log, maxKeys } = this.options;
    if (decided > 0 && !this.full) {
      this.full = true;
      this.stillFull.hit();
      log.warn(
        { maxKeys, decided, refused, fix: 'raise store.maxKeys, or key by something with fewer values' },
        'store key table full: new keys are decided by the overflow sketch, which can only over-count (its refusals count as limited)',
      );
    } else if (decided > 0 && this.stillFull.hit() !== undefined) {
      log.warn({ maxKeys, decided, refused }, 'store key table still full');
    } else if (decided === 0 && this.full) {
      this.full = false;
      log.info({ maxKeys }, 'store key table has room again');
    }
  }
}
