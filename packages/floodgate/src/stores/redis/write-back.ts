/** WriteBackOptions configures a {@link WriteBack}. */
export interface WriteBackOptions {
  /** Most keys owed at once; what is admitted for a key beyond them is not written back (counted in `dropped`). */
  readonly maxKeys: number;
  /** charge charges `cost` to `key` on Redis, as much as still fits (the `charge` script), resolving once done. */
  readonly charge: (key: string, cost: number) => Promise<unknown>;
  /**
   * ready says whether to flush now: not while calls cut off at their deadline may still run on
   * Redis (their late answers take what they charged off what is owed).
   */
  readonly ready: () => boolean;
}

/** How many write-back charges are out at once. */
const CONCURRENCY = 16;

/**
 * WriteBack is what one table's failure policy admitted while Redis was away, per key, charged to
 * Redis once Redis answers again, so that counts after an outage tell the truth: a key admitted 5
 * times during the outage starts spent by 5, not full.
 *
 * It is merged, not replayed: each key's total goes as one `charge`, which takes what still fits
 * and never puts the key in debt. A call that was cut off at its deadline and then answered late
 * ran on Redis after all: {@link ranOnRedis} takes it off, so it is not charged twice. A charge that
 * fails stays owed for the next time Redis answers.
 */
export class WriteBack {
  private owed = new Map<string, number>();
  private flushing = false;
  /** dropped is the cost admitted for keys beyond `maxKeys`, never written back. */
  dropped = 0;

  /** Creates an empty write-back. */
  constructor(private readonly options: WriteBackOptions) {}

  /** size is how many keys are owed. */
  get size(): number {
    return this.owed.size;
  }

  /** busy is true while charges are out. */
  get busy(): boolean {
    return this.flushing;
  }

  /** owedFor returns the cost owed for `key` (0 when none). */
  owedFor(key: string): number {
    return this.owed.get(key) ?? 0;
  }

  /** admitted records `cost` admitted for `key` without Redis. */
  admitted(key: string, cost: number): void {
    if (!(cost > 0)) return;
    const before = this.owed.get(key);
    if (before === undefined && this.owed.size >= this.options.maxKeys) {
      this.dropped += cost;
      return;
    }
    this.owed.set(key, (before ?? 0) + cost);
  }

  /** ranOnRedis takes `cost` off `key`: a call admitted locally was charged by Redis after all (a late answer). */
  ranOnRedis(key: string, cost: number): void {
    const before = this.owed.get(key);
    if (before === undefined) return;
    if (before <= cost) this.owed.delete(key);
    else this.owed.set(key, before - cost);
  }

  /** flush charges everything owed to Redis, a few keys at a time, once `ready`; called whenever Redis answers. */
  flush(): void {
    if (this.flushing || this.owed.size === 0 || !this.options.ready()) return;
    this.flushing = true;
    const batch = this.owed;
    this.owed = new Map();
    const entries = batch.entries();
    let out = 0;
    let failed = false;
    const next = (): void => {
      while (out < CONCURRENCY && !failed) {
        const step = entries.next();
        if (step.done === true) break;
        const [key, cost] = step.value;
        out++;
        this.options.charge(key, cost).then(
          () => {
            out--;
            next();
          },
          () => {
            out--;
            failed = true;
            this.admitted(key, cost);
            next();
          },
        );
      }
      if (out > 0) return;
      if (failed) for (const [key, cost] of entries) this.admitted(key, cost);
      this.flushing = false;
    };
    next();
  }
}
