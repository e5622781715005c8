import { systemClock, type Clock } from '../core/clock.js';
import { FloodgateError } from '../core/errors.js';
import { isTimers, systemTimers, type Timers } from '../core/timers.js';
import { positiveNumber, requireObject } from '../core/validate.js';
import { AbortHooks } from './abort-hooks.js';
import { Alarm } from './alarm.js';
import { aborted, queueFull, rejectVia, type Settle } from './errors.js';
import { checkQueueBound, checkSignal } from './validate.js';
import { WaiterRing } from './waiter-ring.js';

/** ShapingQueueOptions configures a {@link ShapingQueue}. */
export interface ShapingQueueOptions {
  /** Time between two task starts, in ms (fractions allowed): the outflow is 1000 / intervalMs tasks a second. */
  intervalMs: number;
  /**
   * Most tasks that may wait to start: a whole number of at least 0 (0: a task starts at once or
   * is refused), or Infinity. A task beyond it is refused at once with `QUEUE_FULL`.
   */
  capacity: number;
  /** Most tasks running at once (default Infinity): a whole number of at least 1, or Infinity. */
  concurrency?: number;
  /** Source of the current time (default {@link systemClock}). */
  clock?: Clock;
  /** Timers to wait on (default: the clock when it is also Timers, else {@link systemTimers}). */
  timers?: Timers;
}

/** SubmitOptions are the per-task options of {@link ShapingQueue.submit}. */
export interface SubmitOptions {
  /** Withdraws the task with an `ABORTED` error if it fires before the task starts; a started task is not stopped. */
  signal?: AbortSignal;
}

/** A task waiting to start, with the resolve function of the promise `submit` returned. */
interface QueuedTask {
  readonly task: () => unknown;
  readonly settle: Settle<unknown>;
}

/**
 * ShapingQueue is the leaky bucket as a queue: tasks go in at any pace and start at a constant
 * pace, one every `intervalMs`, optionally at most `concurrency` at a time, in the order they
 * came. The bucket holds `capacity` waiting tasks; a task that would overflow it is refused at
 * once with a `QUEUE_FULL` {@link FloodgateError}, so the longest wait is about
 * `capacity * intervalMs` (more when `concurrency` holds tasks back).
 *
 * Starts follow a fixed schedule: a start that its timer delayed by less than one interval does
 * not delay the next, so the rate holds over time, and no two starts are closer than the
 * schedule allows, give or take that delay. A queue that fell idle, or a whole interval behind
 * (held back by `concurrency`), starts its schedule again from now: it never bursts to catch up.
 * A task that can start at once is started before `submit` returns. One timer serves the queue,
 * and only while tasks wait.
 *
 * @example
 * const queue = new ShapingQueue({ intervalMs: 100, capacity: 50, concurrency: 4 });
 * // 10 calls a second at most, 4 in flight at most; beyond 50 waiting, refuse.
 * const reply = await queue.submit(() => fetch(url));
 */
export class ShapingQueue {
  private readonly intervalMs: number;
  private readonly capacity: number;
  private readonly concurrency: number;
  private readonly clock: Clock;
  private readonly ring = new WaiterRing<QueuedTask>();
  private readonly alarm: Alarm;
  private readonly hooks: AbortHooks;
  /** The next start the schedule allows; -Infinity before the first. */
  private nextStartMs = -Infinity;
  private lastNowMs = -Infinity;
  private runningCount = 0;
  private pumping = false;

  /** Creates an empty queue; no timer is set until a task has to wait. */
  constructor(options: ShapingQueueOptions) {
    const o = requireObject<ShapingQueueOptions>(options, 'ShapingQueue');
    this.intervalMs = positiveNumber(o.intervalMs, 'ShapingQueue.intervalMs');
    this.capacity = checkRequiredBound(o.capacity, 'ShapingQueue.capacity');
    this.concurrency = checkConcurrency(o.concurrency, 'ShapingQueue.concurrency');
    this.clock = o.clock ?? systemClock;
    const timers = o.timers ?? (isTimers(this.clock) ? this.clock : systemTimers);
    this.alarm = new Alarm(this.clock, timers, () => this.pump());
    this.hooks = new AbortHooks(this.abort);
  }

  /** waiting returns how many tasks wait to start. */
  get waiting(): number {
    return this.ring.live;
  }

  /** running returns how many started tasks have not settled yet. */
  get running(): number {
    return this.runningCount;
  }

  /**
   * submit queues `task` and returns a promise of its outcome: it resolves or rejects as the
   * task's own result does (whatever it rejects with), once the task has started and settled.
   * It rejects with a {@link FloodgateError} when the task never starts: `QUEUE_FULL` when
   * `capacity` tasks already wait, `ABORTED` when `options.signal` fires first.
   */
  submit<T>(task: () => T | PromiseLike<T>, options?: SubmitOptions): Promise<T> {
    try {
      if (typeof task !== 'function') {
        throw new FloodgateError(
          'INVALID_OPTION',
          'ShapingQueue.submit: task must be a function returning a value or a promise',
          'task',
        );
      }
      const signal = checkSignal(options?.signal, 'signal');
      if (signal?.aborted === true) return Promise.reject(aborted('ShapingQueue.submit', signal));
      const startsNow = this.ring.live === 0 && this.canStart(this.now());
      if (!startsNow && this.ring.live >= this.capacity) {
        return Promise.reject(queueFull('ShapingQueue.submit', 'capacity', this.capacity));
      }
      let settle!: Settle<unknown>;
      const promise = new Promise<T>((resolve) => {
        settle = resolve as Settle<unknown>;
      });
      const seq = this.ring.push({ task, settle }, 1, 0);
      if (signal !== undefined) this.hooks.add(seq, signal);
      this.pump();
      return promise;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Starts every task the schedule and `concurrency` allow now, then re-arms the alarm. */
  private pump(): void {
    if (this.pumping) return; // a task submitted from a starting task: the loop below sees it
    this.pumping = true;
    try {
      for (let seq = this.ring.first(); seq >= 0 && this.canStart(this.now()); seq = this.ring.first()) {
        const queued = this.ring.take(seq)!;
        this.hooks.remove(seq);
        this.start(queued);
      }
    } finally {
      this.pumping = false;
    }
    const blocked = this.ring.live === 0 || this.runningCount >= this.concurrency;
    this.alarm.setAt(blocked ? Infinity : this.nextStartMs);
  }

  private canStart(nowMs: number): boolean {
    return this.runningCount < this.concurrency && nowMs >= this.nextStartMs;
  }

  /** Starts one task now, in the schedule's current slot (or from now, if it fell a whole interval behind). */
  private start(queued: QueuedTask): void {
    const nowMs = this.now();
    if (nowMs - this.nextStartMs >= this.intervalMs) this.nextStartMs = nowMs;
    this.nextStartMs += this.intervalMs;
    this.runningCount++;
    let outcome: Promise<unknown>;
    try {
      outcome = Promise.resolve(queued.task());
    } catch (error) {
      outcome = Promise.reject(error);
    }
    outcome.then(this.finished, this.finished);
    queued.settle(outcome);
  }

  private readonly finished = (): void => {
    this.runningCount--;
    this.pump();
  };

  private readonly abort = (seq: number, signal: AbortSignal): void => {
    const queued = this.ring.take(seq);
    if (queued === undefined) return;
    rejectVia(queued.settle, aborted('ShapingQueue.submit', signal));
    this.pump();
  };

  /** The clock's time; a clock gone back moves the schedule back with it, so nothing stalls. */
  private now(): number {
    const nowMs = this.clock.now();
    if (nowMs < this.lastNowMs) this.nextStartMs -= this.lastNowMs - nowMs;
    this.lastNowMs = nowMs;
    return nowMs;
  }
}

function checkRequiredBound(value: unknown, option: string): number {
  if (value === undefined) {
    throw new FloodgateError('INVALID_OPTION', `${option} is required: the most tasks that may wait, e.g. 100`, option);
  }
  return checkQueueBound(value, option, 0);
}

function checkConcurrency(value: unknown, option: string): number {
  const bound = checkQueueBound(value, option, Infinity);
  if (bound === 0)
    throw new FloodgateError('INVALID_OPTION', `${option} must be at least 1 (or Infinity), got 0`, option);
  return bound;
}
