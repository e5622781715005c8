/**
 * A simulated service for overload tests, on virtual time: `slots` servers behind one unbounded
 * first-in, first-out queue, each call taking a service time. It finishes work whose client has
 * left, like a real service that never learns it. Open-loop Poisson clients call it through a
 * {@link ConcurrencyLimiter} (or without one), and the run counts goodput: answers that reached
 * their client within its timeout.
 */
import { ConcurrencyLimiter, ManualClock, type ConcurrencyPermit } from 'floodgate';
import { seeded } from '../waiting/support.js';

/** A phase of a run: from `fromMs`, the offered rate and the service's shape. */
export interface Phase {
  readonly fromMs: number;
  /** Calls offered per second (Poisson). */
  readonly ratePerSecond: number;
  readonly slots: number;
  readonly serviceMs: number;
}

/** One call's fate. */
interface Call {
  readonly arrivalMs: number;
  readonly tier: number;
  permit: ConcurrencyPermit | undefined;
}

/** What a run measured, per second of virtual time. */
export interface RunResult {
  /** Answers within the client timeout, per second. */
  readonly goodput: number[];
  /** Calls shed, per second. */
  readonly shed: number[];
  /** The limit at the end of each second. */
  readonly limits: number[];
  /** Latencies of the answered calls, from arrival, per second. */
  readonly latenciesMs: number[][];
  /** Calls offered and answered within the timeout, per tier. */
  readonly tiers: { offered: number; good: number }[];
}

/** A binary min-heap of timed events. */
class Events {
  private readonly heap: { atMs: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  get size(): number {
    return this.heap.length;
  }
  push(atMs: number, run: () => void): void {
    const h = this.heap;
    h.push({ atMs, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (before(h[p]!, h[i]!)) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }
  pop(): { atMs: number; run: () => void } {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: { atMs: number; seq: number }, b: { atMs: number; seq: number }): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

/**
 * runService drives `phases` for `durationMs` through `limiter` (none: every call is sent), on
 * `clock`, and returns what it measured. `sample(callIndex)` false marks a call `ignore` (a health
 * check); `fastMs(callIndex)` gives a call its own service time.
 */
export function runService(options: {
  readonly clock: ManualClock;
  readonly limiter: ConcurrencyLimiter | undefined;
  readonly phases: readonly Phase[];
  readonly durationMs: number;
  readonly clientTimeoutMs?: number;
  readonly seed?: number;
  readonly serviceOf?: (index: number, phase: Phase) => { serviceMs: number; outcome: 'success' | 'ignore' };
  /** The tier of call `index` (default 0). */
  readonly tierOf?: (index: number) => number;
}): RunResult {
  const { clock, limiter, phases, durationMs } = options;
  const timeoutMs = options.clientTimeoutMs ?? 1000;
  const random = seeded(options.seed ?? 1);
  const seconds = Math.ceil(durationMs / 1000);
  const result: RunResult = {
    goodput: new Array<number>(seconds).fill(0),
    shed: new Array<number>(seconds).fill(0),
    limits: new Array<number>(seconds).fill(0),
    latenciesMs: Array.from({ length: seconds }, () => []),
    tiers: [],
  };
  const tierStats = (tier: number): { offered: number; good: number } =>
    (result.tiers[tier] ??= { offered: 0, good: 0 });
  const events = new Events();
  const waiting: { call: Call; serviceMs: number; outcome: 'success' | 'ignore' }[] = [];
  let head = 0;
  let busy = 0;
  const phaseAt = (atMs: number): Phase => phases.filter((p) => p.fromMs <= atMs).at(-1)!;
  const startNext = (atMs: number): void => {
    while (busy < phaseAt(atMs).slots && head < waiting.length) {
      const job = waiting[head++]!;
      busy++;
      events.push(atMs + job.serviceMs, () => finish(job.call, job.outcome));
    }
    if (head > 4096 && head * 2 > waiting.length) {
      waiting.splice(0, head);
      head = 0;
    }
  };
  const finish = (call: Call, outcome: 'success' | 'ignore'): void => {
    const nowMs = clock.now();
    busy--;
    call.permit?.release(outcome);
    const second = Math.floor(call.arrivalMs / 1000);
    if (nowMs - call.arrivalMs <= timeoutMs && second < seconds) {
      result.goodput[second]!++;
      result.latenciesMs[second]!.push(nowMs - call.arrivalMs);
      tierStats(call.tier).good++;
    }
    startNext(nowMs);
  };
  let index = 0;
  const arrive = (): void => {
    const nowMs = clock.now();
    const phase = phaseAt(nowMs);
    const tier = options.tierOf?.(index) ?? 0;
    const call: Call = { arrivalMs: nowMs, tier, permit: undefined };
    tierStats(tier).offered++;
    const admission = limiter?.tryAcquire(tier);
    if (admission !== undefined && !admission.allowed) {
      result.shed[Math.floor(nowMs / 1000)]!++;
    } else {
      call.permit = admission;
      const shape = options.serviceOf?.(index, phase) ?? { serviceMs: phase.serviceMs, outcome: 'success' as const };
      waiting.push({ call, ...shape });
      startNext(nowMs);
    }
    index++;
    const next = nowMs - (Math.log(1 - random()) / phaseAt(nowMs).ratePerSecond) * 1000;
    if (next < durationMs) events.push(next, arrive);
  };
  events.push(0, arrive);
  let second = 0;
  while (events.size > 0) {
    const event = events.pop();
    while (event.atMs >= (second + 1) * 1000 && second < seconds) result.limits[second++] = limiter?.limit ?? Infinity;
    clock.set(event.atMs);
    event.run();
  }
  while (second < seconds) result.limits[second++] = limiter?.limit ?? Infinity;
  return result;
}

/** percentile returns the `q` quantile (0..1) of `values`. */
export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** sum adds `values` from `from` to `to` (exclusive). */
export function sum(values: readonly number[], from = 0, to = values.length): number {
  let total = 0;
  for (let i = from; i < to; i++) total += values[i]!;
  return total;
}
