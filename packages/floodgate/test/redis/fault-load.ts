import { performance } from 'node:perf_hooks';
import type { Decision, PolicyStore } from '../../src/index.js';

/** Sample is one decision the load made: when it was asked, how long it took, what came back. */
export interface Sample {
  readonly table: string;
  readonly key: string;
  readonly startedMs: number;
  readonly latencyMs: number;
  readonly decision: Decision | undefined;
  readonly error: unknown;
}

/** LoadOptions configures a {@link Load}. */
export interface LoadOptions {
  /** The tables to drive, by name; each gets the same requests. */
  readonly tables: Readonly<Record<string, PolicyStore>>;
  /** Keys the requests cycle over. */
  readonly keys: number;
  /** Requests per table every 5 ms. */
  readonly perTick: number;
}

/**
 * Load drives tables with a steady stream of consumes (every 5 ms) and records every outcome, so a
 * fault test can check what each failure policy answered, and that every promise settled.
 */
export class Load {
  readonly samples: Sample[] = [];
  private readonly pending = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private next = 0;

  /** Creates an idle load. */
  constructor(private readonly options: LoadOptions) {}

  /** start begins issuing requests. */
  start(): void {
    this.timer = setInterval(() => this.tick(), 5);
  }

  /** stop stops issuing and resolves once every request has settled, or rejects naming how many never did. */
  async stop(settleWithinMs: number): Promise<void> {
    clearInterval(this.timer);
    const all = Promise.allSettled([...this.pending]);
    let guard: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (guard = setTimeout(() => resolve('late'), settleWithinMs)));
    const outcome = await Promise.race([all, late]);
    clearTimeout(guard);
    if (outcome === 'late') throw new Error(`${this.pending.size} decisions never settled`);
  }

  /** since returns the samples asked at or after `startedMs` (performance.now() time), for `table`. */
  since(table: string, startedMs: number, untilMs = Infinity): Sample[] {
    return this.samples.filter((s) => s.table === table && s.startedMs >= startedMs && s.startedMs < untilMs);
  }

  private tick(): void {
    for (let i = 0; i < this.options.perTick; i++) {
      const key = `k${this.next++ % this.options.keys}`;
      for (const [name, table] of Object.entries(this.options.tables)) this.issue(name, table, key);
    }
  }

  private issue(table: string, store: PolicyStore, key: string): void {
    const startedMs = performance.now();
    const record = (decision: Decision | undefined, error: unknown): void => {
      this.samples.push({ table, key, startedMs, latencyMs: performance.now() - startedMs, decision, error });
    };
    const done = Promise.resolve(store.consume(key, 1, Date.now())).then(
      (d) => record(d, undefined),
      (e: unknown) => record(undefined, e),
    );
    this.pending.add(done);
    void done.then(() => this.pending.delete(done));
  }
}

/** firstHealthyMs returns when (performance.now()) the first decision asked after `afterMs` came from Redis ('ok' or 'limit'). */
export function firstHealthyMs(samples: readonly Sample[], afterMs: number): number | undefined {
  const healthy = samples.filter(
    (s) => s.startedMs >= afterMs && (s.decision?.reason === 'ok' || s.decision?.reason === 'limit'),
  );
  return healthy.length === 0 ? undefined : Math.min(...healthy.map((s) => s.startedMs + s.latencyMs));
}

/** sleep resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
