import { performance } from 'node:perf_hooks';

interface Pending {
  readonly deadlineMs: number;
  settled: boolean;
  readonly onTimeout: () => void;
}

/**
 * Deadlines bounds how long operations may take, with one timer for all of them (never one per
 * request). Every operation gets the same `timeoutMs`, so deadlines arrive in the order operations
 * start: a FIFO queue whose head is always the next to expire. Times are monotonic
 * (`performance.now()`), and the timer is unref'd so it never keeps a process alive.
 */
export class Deadlines {
  private readonly queue: Pending[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  /** Creates a queue whose operations time out after `timeoutMs`. */
  constructor(private readonly timeoutMs: number) {}

  /**
   * run resolves as `operation` does, or rejects with `timeoutError()` once `timeoutMs` passes
   * first. The operation itself is not cancelled (Redis may still run it).
   */
  run<T>(operation: Promise<T>, timeoutError: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        deadlineMs: performance.now() + this.timeoutMs,
        settled: false,
        onTimeout: () => reject(timeoutError()),
      };
      this.queue.push(pending);
      if (this.timer === undefined) this.arm();
      operation.then(
        (value) => {
          pending.settled = true;
          resolve(value);
        },
        (error: unknown) => {
          pending.settled = true;
          reject(error);
        },
      );
    });
  }

  private arm(): void {
    while (this.head < this.queue.length && this.queue[this.head]!.settled) this.head++;
    this.compact();
    const next = this.queue[this.head];
    if (next === undefined) {
      this.timer = undefined;
      return;
    }
    const delayMs = Math.max(0, next.deadlineMs - performance.now());
    this.timer = setTimeout(() => this.fire(), Math.ceil(delayMs));
    this.timer.unref();
  }

  private fire(): void {
    const nowMs = performance.now();
    for (; this.head < this.queue.length; this.head++) {
      const pending = this.queue[this.head]!;
      if (pending.settled) continue;
      if (pending.deadlineMs > nowMs) break;
      pending.settled = true;
      pending.onTimeout();
    }
    this.arm();
  }

  /** Drops the settled prefix once it is large, so the queue's memory follows the operations in flight. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}
