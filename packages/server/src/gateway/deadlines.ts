/**
 * One timeout shared by many requests, kept to the millisecond with one timer. undici's own
 * headers timeout runs on its coarse timers (a tick every 499 ms), so an `upstreamTimeoutMs` of
 * 200 fired after about a second. Every request of a gateway waits the same `timeoutMs`, so their
 * deadlines come in the order they are set: a first-in, first-out line with one native timer for
 * the earliest is exact, costs O(1) a request, and holds no timer per request.
 */

/** Expiring is what a deadline calls when it expires (a request's forward: no closure made per request). */
export interface Expiring {
  expire(): void;
}

/** Deadline is one request's place in {@link Deadlines}; `cancel` takes it out (a no-op once expired). */
export class Deadline {
  constructor(
    readonly atMs: number,
    /** What expires; undefined once cancelled or expired. */
    public target: Expiring | undefined,
  ) {}

  /** cancel takes the deadline out: it will not expire. */
  cancel(): void {
    this.target = undefined;
  }
}

/** DeadlinesOptions configures {@link Deadlines}; the clock and timer are the system's unless given (tests). */
export interface DeadlinesOptions {
  /** How long after {@link Deadlines.start} a deadline expires, in ms. */
  readonly timeoutMs: number;
  readonly now?: () => number;
  readonly setTimer?: (fn: () => void, ms: number) => unknown;
  readonly clearTimer?: (timer: unknown) => void;
}

/**
 * Deadlines calls each started deadline's `expire` `timeoutMs` after its start unless it was
 * cancelled first.
 *
 * @example
 * const deadlines = new Deadlines({ timeoutMs: 200 });
 * const deadline = deadlines.start({ expire: () => abort(new Error('timed out')) });
 * deadline.cancel(); // the answer came in time
 */
export class Deadlines {
  private line: Deadline[] = [];
  private head = 0;
  private timer: unknown = undefined;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (timer: unknown) => void;

  constructor(options: DeadlinesOptions) {
    this.timeoutMs = options.timeoutMs;
    this.now = options.now ?? (() => performance.now());
    this.setTimer =
      options.setTimer ??
      ((fn, ms) => {
        const t = setTimeout(fn, ms);
        t.unref();
        return t;
      });
    this.clearTimer = options.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout));
  }

  /** start returns a deadline that calls `target.expire()` once, `timeoutMs` from now, unless cancelled. */
  start(target: Expiring): Deadline {
    const entry = new Deadline(this.now() + this.timeoutMs, target);
    this.dropAnswered();
    this.line.push(entry);
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return entry;
  }

  /** close stops the timer; deadlines not yet expired never will. */
  close(): void {
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    this.line = [];
    this.head = 0;
  }

  /**
   * dropAnswered lets go of the cancelled deadlines at the head of the line: most requests are
   * answered in about the order they were sent, so the line holds roughly the requests in flight,
   * not every request of the last `timeoutMs`.
   */
  private dropAnswered(): void {
    const line = this.line;
    while (this.head < line.length && line[this.head]!.target === undefined) this.head++;
    if (this.head === line.length) {
      if (line.length > 0) this.line = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > line.length) {
      this.line = line.slice(this.head);
      this.head = 0;
    }
  }

  private arm(ms: number): void {
    this.timer = this.setTimer(() => this.expire(), Math.max(0, ms));
  }

  private expire(): void {
    this.timer = undefined;
    const nowMs = this.now();
    while (this.head < this.line.length) {
      const entry = this.line[this.head]!;
      if (entry.target !== undefined && entry.atMs > nowMs) break;
      this.head++;
      const target = entry.target;
      entry.target = undefined;
      target?.expire();
    }
    this.dropAnswered();
    if (this.head < this.line.length) this.arm(this.line[this.head]!.atMs - nowMs);
  }
}
