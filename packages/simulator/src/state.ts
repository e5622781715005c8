import type { Decision } from 'floodgate';
import type { PolicySpec } from './scenario.js';

/**
 * StateReading says what a lane's algorithm state is, as the seeds draw it, and how to read it
 * from the library's own answer for the key (a decision, or a peek at cost 0): the tokens left in
 * a token bucket, the water in a leaky bucket, the count of a window, GCRA's theoretical arrival
 * time ahead of now. Queueing policies have no decision: a shaping queue's state is the requests
 * waiting, a smooth limiter's the interval it puts between the starts it holds back.
 */
export interface StateReading {
  /** What the state is, for a chart's axis and an export's header, e.g. `tokens left`. */
  readonly label: string;
  /** The state's value after `decision`, in the label's unit (undefined for queueing policies). */
  readonly of: ((decision: Decision) => number) | undefined;
  /** The most (or, for tokens, the least) the state can be: drawn as a line. */
  readonly bound: number;
  /** What that line is, e.g. `capacity`. */
  readonly boundLabel: string;
  /** 1 when a higher value is a fuller key (a count), -1 when lower is (tokens left). */
  readonly fuller: 1 | -1;
}

/** stateReadingOf returns how the state of a lane running `spec` is read and drawn. */
export function stateReadingOf(spec: PolicySpec): StateReading {
  switch (spec.type) {
    case 'token-bucket': {
      const perMs = spec.refillPerSecond / 1000;
      const capacity = spec.capacity;
      // Whole tokens left; in debt (a waiting lane books ahead), the debt, from the time to full.
      return {
        label: 'tokens left',
        of: (d) => (d.remaining > 0 ? d.remaining : Math.min(0, capacity - d.resetMs * perMs)),
        bound: capacity,
        boundLabel: 'capacity',
        fuller: -1,
      };
    }
    case 'leaky-bucket': {
      const perMs = spec.leakPerSecond / 1000;
      const capacity = spec.capacity;
      return {
        label: 'water in the bucket',
        of: (d) => (d.remaining > 0 ? capacity - d.remaining : Math.max(capacity, d.resetMs * perMs)),
        bound: capacity,
        boundLabel: 'capacity',
        fuller: 1,
      };
    }
    case 'fixed-window':
    case 'sliding-window-log':
    case 'sliding-window-counter': {
      const limit = spec.limit;
      const label =
        spec.type === 'fixed-window'
          ? 'count in the current window'
          : spec.type === 'sliding-window-log'
            ? 'count in the last window'
            : 'weighted count of the windows';
      return { label, of: (d) => limit - d.remaining, bound: limit, boundLabel: 'limit', fuller: 1 };
    }
    case 'gcra':
      return {
        label: 'TAT ahead of now (ms)',
        of: (d) => d.resetMs,
        bound: ((spec.maxBurst + 1) * spec.periodMs) / spec.rate,
        boundLabel: 'burst tolerance + one interval',
        fuller: 1,
      };
    case 'shaping-queue':
      return { label: 'waiting in the queue', of: undefined, bound: spec.capacity, boundLabel: 'capacity', fuller: 1 };
    case 'smooth-bursty':
    case 'smooth-warming-up':
      return {
        label: 'interval between starts (ms)',
        of: undefined,
        bound: 1000 / spec.permitsPerSecond,
        boundLabel: 'stable interval',
        fuller: 1,
      };
  }
}

/**
 * StateProbe samples one key's state at the end of every chart step, as virtual time passes: an
 * engine calls {@link StateProbe.until} before it moves time to `t`, and the probe reads the state
 * at each step end up to `t` (NaN where it never got there).
 */
export class StateProbe {
  /** The state at the end of each step. */
  readonly values: Float64Array;
  private next = 0;

  constructor(
    private readonly stepMs: number,
    steps: number,
  ) {
    this.values = new Float64Array(steps).fill(NaN);
    this.nextMs = steps > 0 ? stepMs : Infinity;
  }

  /** The next step end to read, in ms (Infinity once all are read): an engine calls {@link until} only from then on. */
  nextMs: number;

  /** until reads, with `read(atMs)`, the state at every step end not yet read that is at or before `atMs`. */
  until(atMs: number, read: (atMs: number) => number): void {
    for (; this.next < this.values.length && (this.next + 1) * this.stepMs <= atMs; this.next++)
      this.values[this.next] = read((this.next + 1) * this.stepMs);
    this.nextMs = this.next < this.values.length ? (this.next + 1) * this.stepMs : Infinity;
  }
}

/** The most chart steps a run can have (as `simulate` cuts it): a recorder folds later times into the last. */
export const MAX_STEPS = 10_000;

/** StateRecorderOptions configures a {@link StateRecorder}. */
export interface StateRecorderOptions {
  /** The key ids of the arrivals, by request. */
  readonly keyIds: Int32Array;
  /** The key whose state is folded per chart step. */
  readonly chartKeyId: number;
  readonly stepMs: number;
  /** 1 when a higher value is a fuller key, -1 when lower is. */
  readonly fuller: 1 | -1;
  /** Keep every request's state (for an export), not only the chart key's per step: 4 bytes a request. */
  readonly keepAll: boolean;
}

/**
 * StateRecorder takes the key state after each decision of a run: it folds the chart key's into
 * its fullest value per chart step and, when asked to, keeps every request's.
 */
export class StateRecorder {
  /** Each request's state after its decision (NaN: none), when kept. */
  readonly all: Float32Array | undefined;
  /** The chart key's fullest state after a decision in each step (NaN: no decision there). */
  readonly fullest = new Float64Array(MAX_STEPS).fill(NaN);

  constructor(private readonly options: StateRecorderOptions) {
    this.all = options.keepAll ? new Float32Array(options.keyIds.length).fill(NaN) : undefined;
  }

  /** note records `value`, the state after request `i` was decided at `atMs` (its admission, or its arrival when refused). */
  note(i: number, atMs: number, value: number): void {
    if (this.all !== undefined) this.all[i] = value;
    const o = this.options;
    if (o.keyIds[i] !== o.chartKeyId || value !== value) return;
    const step = Math.min(MAX_STEPS - 1, Math.max(0, Math.floor(atMs / o.stepMs)));
    const current = this.fullest[step]!;
    if (current !== current || (value - current) * o.fuller > 0) this.fullest[step] = value;
  }
}
