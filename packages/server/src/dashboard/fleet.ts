/**
 * The gateway processes that share one store, each seen by every other's dashboard: once a second
 * a process writes a summary of its own board (its rules' rates and queues) to the store's
 * process registry and reads everyone's back, so any process's dashboard shows a row per process.
 */
import type { Clock, TimerHandle, Timers } from 'floodgate';
import { timersFor } from './overload.js';

/** ProcessRegistry is where processes sharing a store leave their summaries: one entry per process id. */
export interface ProcessRegistry {
  /** publish writes (or replaces) the entry of process `id`. */
  publish(id: string, entry: string): Promise<void>;
  /** entries returns every process's entry, by id. */
  entries(): Promise<Record<string, string>>;
  /** remove deletes the entries of `ids`. */
  remove(ids: readonly string[]): Promise<void>;
}

/** RuleSummary is one rule's figures as a process publishes them: per second over the last 10 s. */
export interface RuleSummary {
  readonly route: string;
  readonly rule: string;
  readonly admitted: number;
  readonly limited: number;
  readonly wouldRefuse: number;
  readonly degraded: number;
  /** Requests waiting in a queue-mode rule's line now (0 for other modes). */
  readonly queued: number;
}

/** ProcessIdentity names one gateway process: its host, pid, and its listeners. */
export interface ProcessIdentity {
  readonly host: string;
  readonly pid: number;
  /** The traffic and admin ports it listens on (undefined until it listens). */
  readonly port: number | undefined;
  readonly adminPort: number | undefined;
}

/** ProcessSummary is what one process publishes of itself. */
export interface ProcessSummary extends ProcessIdentity {
  readonly startedAtMs: number;
  /** When it was written, by the writer's clock. */
  readonly atMs: number;
  readonly ready: boolean;
  readonly rules: readonly RuleSummary[];
}

/** FleetView is every process seen on the store lately, this one marked, oldest first. */
export interface FleetView {
  readonly processes: readonly (ProcessSummary & {
    readonly id: string;
    readonly self: boolean;
    readonly ageMs: number;
  })[];
  /** The latest failure to reach the registry, when the latest round failed. */
  readonly error?: string;
}

/** FleetOptions configures a {@link FleetBoard}. */
export interface FleetOptions {
  readonly clock: Clock;
  readonly registry: ProcessRegistry;
  /** summary returns this process's summary now. */
  summary(): ProcessSummary;
  /** The timer (default the clock when it is also `Timers`, else unref'd `setTimeout`s). */
  readonly timers?: Timers;
}

/** A process not heard from for this long is no longer shown (it stopped, or its clock is that far off). */
const SHOWN_MS = 10_000;
/** A process not heard from for this long is removed from the registry by whoever reads it. */
const FORGOTTEN_MS = 60_000;
/** The most processes shown (and parsed) from one registry. */
const MAX_PROCESSES = 64;
/** How long one round may wait for the store (a hung store must not stop the rounds). */
const ROUND_TIMEOUT_MS = 1_000;

/**
 * FleetBoard returns the view of every gateway process on the store: once a second (unref'd, until
 * {@link FleetBoard.stop}) it publishes this process's summary and reads all of them; the view is
 * the latest read, so a snapshot never waits for the store. Processes silent for 10 s are not shown,
 * and removed after 60 s. Memory: at most 64 summaries.
 *
 * @example
 * const fleet = new FleetBoard({ clock, registry, summary: () => summaryOf(board) });
 * fleet.start();
 * fleet.view(clock.now()).processes.length; // every process on the store, this one included
 */
export class FleetBoard {
  readonly id: string;
  private readonly timers: Timers;
  private timer: TimerHandle | undefined;
  private latest: Record<string, ProcessSummary> = {};
  private error: string | undefined;
  private running = false;

  constructor(private readonly options: FleetOptions) {
    const self = options.summary();
    this.id = `${self.host}/${self.pid}/${self.startedAtMs}`;
    this.timers = timersFor(options.clock, options.timers);
  }

  /** start publishes and reads now, then once a second. */
  start(): void {
    this.stop();
    this.running = true;
    void this.round();
  }

  /** stop ends the rounds; the latest view stays. */
  stop(): void {
    this.running = false;
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.timer = undefined;
  }

  /** view returns the processes heard from within 10 s of `nowMs`, this one first among equals, by id. */
  view(nowMs: number): FleetView {
    const processes = Object.entries(this.latest)
      .map(([id, p]) => ({ ...p, id, self: id === this.id, ageMs: Math.max(0, nowMs - p.atMs) }))
      .filter((p) => p.self || p.ageMs <= SHOWN_MS)
      .sort((a, b) => a.startedAtMs - b.startedAtMs || (a.id < b.id ? -1 : 1));
    return this.error === undefined ? { processes } : { processes, error: this.error };
  }

  /** One round: publish this process's summary, read everyone's, forget the long silent. */
  private async round(): Promise<void> {
    const registry = this.options.registry;
    const self = this.options.summary();
    try {
      await this.inTime(registry.publish(this.id, JSON.stringify(self)));
      const entries = await this.inTime(registry.entries());
      const latest: Record<string, ProcessSummary> = { [this.id]: self };
      const forgotten: string[] = [];
      for (const [id, text] of Object.entries(entries).slice(0, MAX_PROCESSES)) {
        const summary = parseSummary(text);
        if (summary === undefined || self.atMs - summary.atMs > FORGOTTEN_MS) forgotten.push(id);
        else if (id !== this.id) latest[id] = summary;
      }
      if (forgotten.length > 0) await this.inTime(registry.remove(forgotten));
      this.latest = latest;
      this.error = undefined;
    } catch (err) {
      this.latest = { ...this.latest, [this.id]: self };
      this.error = (err as Error).message;
    }
    if (this.running) this.timer = this.timers.setTimer(() => void this.round(), 1000);
  }

  /** `work`, or a rejection once it took {@link ROUND_TIMEOUT_MS}. */
  private inTime<T>(work: Promise<T>): Promise<T> {
    let timer: TimerHandle | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = this.timers.setTimer(
        () => reject(new Error(`no answer within ${ROUND_TIMEOUT_MS} ms`)),
        ROUND_TIMEOUT_MS,
      );
    });
    return Promise.race([work, late]).finally(() => this.timers.clearTimer(timer!));
  }
}

/** A summary read back from the registry, or undefined when it is not one (another writer's garbage). */
function parseSummary(text: string): ProcessSummary | undefined {
  try {
    const value = JSON.parse(text) as Partial<ProcessSummary>;
    if (typeof value.atMs !== 'number' || typeof value.pid !== 'number' || !Array.isArray(value.rules))
      return undefined;
    return value as ProcessSummary;
  } catch {
    return undefined;
  }
}
