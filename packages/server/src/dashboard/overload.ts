/**
 * The overload protection as the dashboard remembers it: per guarded scope (`route:<name>` or
 * `upstream:<name>`), one sample a second of its concurrency limit, calls in flight and waiting,
 * latencies and sheds; per circuit, its latest changes of state. Sampled on a timer of its own
 * from the guards in force, so a request pays nothing for it.
 */
import type { Clock, ConcurrencySnapshot, TimerHandle, Timers } from 'floodgate';
import { Ring } from './ring.js';

/** OverloadGuard is what the board reads of one protected scope; the gateway's `Guard` is one. */
export interface OverloadGuard {
  /** `route:<name>` or `upstream:<name>`. */
  readonly scope: string;
  readonly limiter: { snapshot(): ConcurrencySnapshot } | undefined;
  readonly breaker: { readonly state: string; retryInMs(): number } | undefined;
}

/** ShedTotal is one shed count since the start: requests of `scope` refused for `reason` (rows of the same pair are added up). */
export interface ShedTotal {
  readonly scope: string;
  readonly reason: string;
  readonly total: number;
}

/** OverloadSource is what {@link OverloadBoard.follow} samples: the guards in force (they change on reload) and the shed counts. */
export interface OverloadSource {
  guards(): Iterable<OverloadGuard>;
  /** shedTotals returns every shed counted since the start; it may answer later (a metrics registry does). */
  shedTotals(): Iterable<ShedTotal> | Promise<Iterable<ShedTotal>>;
}

/** OverloadSample is one scope at one second; the limiter's figures are undefined for a scope with a circuit breaker alone. */
export interface OverloadSample {
  readonly atMs: number;
  readonly limit: number | undefined;
  readonly inFlight: number | undefined;
  readonly queued: number | undefined;
  /** An adaptive limit's latency estimates, in ms; undefined for a fixed limit and until the first window closed. */
  readonly baselineRttMs: number | undefined;
  readonly sampleRttMs: number | undefined;
  readonly probing: boolean;
  /** Requests refused since the previous sample (about a second), by reason; reasons with none are left out. */
  readonly sheds: Readonly<Record<string, number>>;
  /** The circuit's state, or undefined without a circuit breaker. */
  readonly circuit: string | undefined;
}

/** CircuitTransition is one change of a circuit's state, timed by the board's clock. */
export interface CircuitTransition {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
  /** Why, when the one reporting it said so. */
  readonly reason: string | undefined;
}

/** OverloadScopeView is one scope on the dashboard: its figures now, its samples and its circuit. */
export interface OverloadScopeView {
  readonly scope: string;
  /** The limiter's snapshot now, or undefined without a concurrency or adaptive section. */
  readonly now: ConcurrencySnapshot | undefined;
  /** The samples of the window, oldest first. */
  readonly samples: readonly OverloadSample[];
  /** Sheds per second over the last {@link RECENT_SECONDS} samples, by reason. */
  readonly shedPerSecond: Readonly<Record<string, number>>;
  /** Sheds in the window's samples, by reason. */
  readonly shedInWindow: Readonly<Record<string, number>>;
  readonly circuit:
    | { readonly state: string; readonly retryInMs: number; readonly transitions: readonly CircuitTransition[] }
    | undefined;
}

/** OverloadView is the overload protection of every scope in force, in the guards' order. */
export interface OverloadView {
  readonly windowSeconds: number;
  readonly scopes: readonly OverloadScopeView[];
}

/** OverloadBoardOptions configures an {@link OverloadBoard}. */
export interface OverloadBoardOptions {
  readonly clock: Clock;
  /** The sampling timer (default the clock when it is also `Timers`, as a `ManualClock` is; else unref'd `setTimeout`s). */
  readonly timers?: Timers;
  /** Samples kept per scope, one a second (default 120; at least 1). */
  readonly seconds?: number;
  /** Circuit changes kept per scope (default 8; at least 1). */
  readonly transitions?: number;
}

/** How many of the latest samples the shed rate is averaged over. */
export const RECENT_SECONDS = 10;

/** A sampler must never keep the process alive, unlike a waiter's timer: its timers are unref'd. */
const unrefTimers: Timers = {
  setTimer(callback, delayMs) {
    const timeout = setTimeout(callback, Math.max(0, Math.ceil(delayMs)));
    timeout.unref();
    return timeout;
  },
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * timersFor returns the timers a sampler of the board uses: `timers` when given, else the clock
 * when it also sets timers (a `ManualClock` does), else unref'd `setTimeout`s.
 */
export function timersFor(clock: Clock, timers: Timers | undefined): Timers {
  return timers ?? (isTimers(clock) ? clock : unrefTimers);
}

/** Whether `clock` also sets timers (a `ManualClock` does), as the library's own structures ask. */
function isTimers(clock: Clock): clock is Clock & Timers {
  const candidate = clock as Partial<Timers>;
  return typeof candidate.setTimer === 'function' && typeof candidate.clearTimer === 'function';
}

/** What the board keeps of one scope: a ring of samples, a ring of circuit changes, the circuit's last known state. */
interface ScopeMemory {
  readonly samples: Ring<OverloadSample>;
  readonly transitions: Ring<CircuitTransition>;
  circuit: string | undefined;
}

/**
 * OverloadBoard returns the dashboard's memory of the overload guards. Once it follows a source,
 * it samples every scope at each whole second of its clock; a scope that leaves the guards (a
 * reload removed its section) is forgotten at the next sample. Memory is bounded whatever the
 * traffic: per scope in force, `seconds` samples and `transitions` circuit changes.
 *
 * @example
 * const overload = new OverloadBoard({ clock });
 * overload.follow({ guards: () => gateway.table.guards.all, shedTotals: () => [] });
 * overload.view(clock.now()).scopes[0]?.now?.inFlight;
 */
export class OverloadBoard {
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly seconds: number;
  private readonly transitionsKept: number;
  private readonly scopes = new Map<string, ScopeMemory>();
  /** The shed counts read last, by scope then reason; undefined before the first read. */
  private lastTotals: Map<string, Map<string, number>> | undefined;
  private source: OverloadSource | undefined;
  private timer: TimerHandle | undefined;
  private reading = false;

  constructor(options: OverloadBoardOptions) {
    this.clock = options.clock;
    this.timers = timersFor(options.clock, options.timers);
    this.seconds = Math.max(1, Math.floor(options.seconds ?? 120));
    this.transitionsKept = Math.max(1, Math.floor(options.transitions ?? 8));
  }

  /** follow samples `source` now and then at each whole second, until {@link stop}; following another source replaces it. */
  follow(source: OverloadSource): void {
    this.stop();
    this.source = source;
    this.read();
    this.arm();
  }

  /** stop ends the sampling; what was sampled stays. */
  stop(): void {
    if (this.timer !== undefined) this.timers.clearTimer(this.timer);
    this.timer = undefined;
    this.source = undefined;
  }

  /**
   * sample records `guards` at `nowMs`, with the sheds counted since the previous sample (the
   * first counts none: what `totals` held before is history). A second sampled twice keeps the
   * latest figures and adds the sheds; a clock gone back samples into the latest second. Scopes
   * not in `guards` are forgotten.
   */
  sample(guards: Iterable<OverloadGuard>, totals: Iterable<ShedTotal> | undefined, nowMs: number): void {
    const sheds = this.shedsSince(totals);
    const present = new Set<string>();
    for (const guard of guards) {
      present.add(guard.scope);
      const memory = this.memoryOf(guard.scope);
      memory.circuit = guard.breaker?.state;
      const latest = memory.samples.latest();
      const sample = sampleOf(guard, memory.circuit, sheds.get(guard.scope), nowMs);
      if (latest !== undefined && Math.floor(nowMs / 1000) <= Math.floor(latest.atMs / 1000)) {
        memory.samples.replaceLatest({ ...sample, atMs: latest.atMs, sheds: addCounts(latest.sheds, sample.sheds) });
      } else {
        memory.samples.push(sample);
      }
    }
    for (const scope of this.scopes.keys()) if (!present.has(scope)) this.scopes.delete(scope);
  }

  /** circuitTransition records that the circuit of `scope` went to `to`, now; its shape is the guards' `GuardEvents`. */
  circuitTransition(scope: string, to: string, reason?: string): void {
    const memory = this.memoryOf(scope);
    const from = memory.circuit ?? 'closed';
    memory.circuit = to;
    memory.transitions.push({ atMs: this.clock.now(), from, to, reason });
  }

  /** view returns every scope of `guards` (default the followed source's) as it stands at `nowMs`, with the samples of the window before it. */
  view(nowMs: number, guards: Iterable<OverloadGuard> = this.source?.guards() ?? []): OverloadView {
    const scopes: OverloadScopeView[] = [];
    for (const guard of guards) {
      const memory = this.scopes.get(guard.scope);
      const samples =
        memory?.samples.items().filter((s) => s.atMs > nowMs - this.seconds * 1000 && s.atMs <= nowMs) ?? [];
      const recent = samples.slice(-RECENT_SECONDS);
      const breaker = guard.breaker;
      scopes.push({
        scope: guard.scope,
        now: guard.limiter?.snapshot(),
        samples,
        shedPerSecond: scaleCounts(
          recent.reduce((sum, s) => addCounts(sum, s.sheds), {}),
          1 / Math.max(1, recent.length),
        ),
        shedInWindow: samples.reduce((sum, s) => addCounts(sum, s.sheds), {}),
        circuit:
          breaker === undefined
            ? undefined
            : {
                state: breaker.state,
                retryInMs: breaker.retryInMs(),
                transitions: memory?.transitions.items().reverse() ?? [],
              },
      });
    }
    return { windowSeconds: this.seconds, scopes };
  }

  private memoryOf(scope: string): ScopeMemory {
    let memory = this.scopes.get(scope);
    if (memory === undefined) {
      memory = { samples: new Ring(this.seconds), transitions: new Ring(this.transitionsKept), circuit: undefined };
      this.scopes.set(scope, memory);
    }
    return memory;
  }

  /** Arms the timer for the next whole second of the clock. */
  private arm(): void {
    const nowMs = this.clock.now();
    this.timer = this.timers.setTimer(this.tick, 1000 - (((nowMs % 1000) + 1000) % 1000));
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.arm();
    this.read();
  };

  /** Reads the shed counts (waiting for them when they come later), then samples the guards in force. */
  private read(): void {
    const source = this.source;
    if (source === undefined || this.reading) return;
    let totals: ReturnType<OverloadSource['shedTotals']> | undefined;
    try {
      totals = source.shedTotals();
    } catch {
      totals = undefined;
    }
    if (!(totals instanceof Promise)) return this.sampleSafely(source, totals);
    this.reading = true;
    totals.then(
      (read) => this.sampleSafely(source, read),
      () => this.sampleSafely(source, undefined),
    );
  }

  private sampleSafely(source: OverloadSource, totals: Iterable<ShedTotal> | undefined): void {
    this.reading = false;
    if (this.source !== source) return;
    try {
      this.sample(source.guards(), totals, this.clock.now());
    } catch {
      // A timer's exception would end the gateway; a missed second shows as a gap in the charts.
    }
  }

  /** The sheds since the previous read, by scope then reason; none on the first read or without totals. */
  private shedsSince(totals: Iterable<ShedTotal> | undefined): Map<string, Record<string, number>> {
    const since = new Map<string, Record<string, number>>();
    if (totals === undefined) return since;
    const current = new Map<string, Map<string, number>>();
    for (const { scope, reason, total } of totals) {
      let reasons = current.get(scope);
      if (reasons === undefined) current.set(scope, (reasons = new Map()));
      reasons.set(reason, (reasons.get(reason) ?? 0) + total);
    }
    const previous = this.lastTotals;
    this.lastTotals = current;
    if (previous === undefined) return since;
    for (const [scope, reasons] of current) {
      const counts: Record<string, number> = {};
      // A count first seen after the first read started at 0; one that went down (a reset) counts from there.
      for (const [reason, total] of reasons) {
        const delta = total - (previous.get(scope)?.get(reason) ?? 0);
        if (delta > 0) counts[reason] = delta;
      }
      since.set(scope, counts);
    }
    return since;
  }
}

function sampleOf(
  guard: OverloadGuard,
  circuit: string | undefined,
  sheds: Record<string, number> | undefined,
  atMs: number,
): OverloadSample {
  const s = guard.limiter?.snapshot();
  return {
    atMs,
    limit: s?.limit,
    inFlight: s?.inFlight,
    queued: s?.queued,
    baselineRttMs: s?.adaptive?.baselineRttMs,
    sampleRttMs: s?.adaptive?.sampleRttMs,
    probing: s?.adaptive?.probing ?? false,
    sheds: sheds ?? {},
    circuit,
  };
}

function addCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): Record<string, number> {
  const sum = { ...a };
  for (const [k, v] of Object.entries(b)) sum[k] = (sum[k] ?? 0) + v;
  return sum;
}

function scaleCounts(counts: Readonly<Record<string, number>>, factor: number): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v * factor]));
}
