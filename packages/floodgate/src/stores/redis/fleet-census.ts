import { randomUUID } from 'node:crypto';
import type { ScriptRunner } from './runner.js';
import { CENSUS_SCRIPT } from './scripts/index.js';

/** FleetCensusOptions configures a {@link FleetCensus}. */
export interface FleetCensusOptions {
  /** The census's key: one per prefix, so stores sharing a prefix count each other. */
  readonly key: string;
  /** How often this store beats, in ms (default 5,000). A beat counts for three intervals. */
  readonly intervalMs?: number;
}

/**
 * FleetCensus counts the stores (one per process, as usually built) sharing a Redis, so that
 * while Redis is away each process can admit its share of every limit. Each store beats at most
 * once an interval, riding on its own traffic (`beat` is called with a time the runner already
 * read): no timer, and nothing sent by an idle process, nor by one whose failure policies take
 * no share from it. The first beat goes one interval after the first answer. The count is what Redis last answered;
 * until it has answered, and whenever it is away, the last count stands (1 before any).
 */
export class FleetCensus {
  private counted = 1;
  /** NaN until the first answer: the first beat goes one interval after it, so a short-lived store sends none. */
  private lastBeatMs = Number.NaN;
  private beating = false;
  private readonly id = randomUUID();
  private readonly intervalMs: number;

  /** Creates a census that beats through `runner`. */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly options: FleetCensusOptions,
  ) {
    this.intervalMs = options.intervalMs ?? 5000;
  }

  /** needed is set once a table's failure policy takes its share from the census: until then nothing is sent. */
  needed = false;

  /** nodes is how many stores beat on this Redis recently, this one included (at least 1). */
  get nodes(): number {
    return this.counted;
  }

  /** beat sends a beat when one is due at `nowMs` (the runner's clock) and none is out. */
  readonly beat = (nowMs: number): void => {
    if (!this.needed) return;
    if (Number.isNaN(this.lastBeatMs)) {
      this.lastBeatMs = nowMs;
      return;
    }
    if (this.beating || nowMs - this.lastBeatMs < this.intervalMs) return;
    this.beating = true;
    this.lastBeatMs = nowMs;
    this.runner.run(CENSUS_SCRIPT, [this.options.key], [this.id, String(3 * this.intervalMs)], 'census').then(
      (reply) => {
        this.beating = false;
        if (typeof reply === 'number' && Number.isSafeInteger(reply) && reply >= 1) this.counted = reply;
      },
      () => {
        this.beating = false;
      },
    );
  };
}
