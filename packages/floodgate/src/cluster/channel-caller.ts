import type { Clock } from '../core/clock.js';
import { FloodgateError } from '../core/errors.js';
import type { Timers } from '../core/timers.js';
import { DeadlineQueue, type Deadline } from '../stores/deadline-queue.js';
import {
  MARK,
  errorOf,
  isNotice,
  isReply,
  type ClusterChannel,
  type ClusterNotice,
  type ClusterOp,
  type ClusterReply,
} from './protocol.js';

/** A call waiting for its reply. */
interface Pending extends Deadline {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/**
 * ChannelCaller sends a worker's calls to the host over one channel and matches each reply to its
 * call by id. A call not answered within `timeoutMs` rejects with `STORE_TIMEOUT` (one timer for all
 * calls, as the library's other deadlines); a reply that comes later is dropped.
 */
export class ChannelCaller {
  /** sent counts the calls sent, for benchmarks and tests. */
  sent = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly deadlines: DeadlineQueue;
  private readonly stop: () => void;
  private closed = false;

  constructor(
    private readonly channel: ClusterChannel,
    private readonly clock: Clock,
    timers: Timers,
    private readonly timeoutMs: number,
    onNotice: (notice: ClusterNotice) => void,
  ) {
    this.deadlines = new DeadlineQueue(clock, timers);
    this.stop = channel.onMessage((message) => {
      if (isReply(message)) this.settle(message);
      else if (isNotice(message)) onNotice(message);
    });
  }

  /** call sends one operation and resolves to the host's value, or rejects with its typed error. */
  call(
    op: ClusterOp,
    policy: string,
    key: string,
    args: readonly (number | string)[],
    holder?: string,
  ): Promise<unknown> {
    if (this.closed)
      return Promise.reject(new FloodgateError('LIMITER_CLOSED', 'the cluster store was closed', 'store'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        deadlineMs: this.clock.now() + this.timeoutMs,
        settled: false,
        resolve,
        reject,
        expire: () => {
          this.pending.delete(id);
          reject(
            new FloodgateError(
              'STORE_TIMEOUT',
              `the cluster store's host did not answer within ${this.timeoutMs} ms`,
              'store',
            ),
          );
        },
      };
      this.pending.set(id, pending);
      this.deadlines.add(pending);
      this.sent++;
      try {
        this.channel.send({ m: MARK, id, op, policy, key, args, ...(holder === undefined ? {} : { holder }) });
      } catch (err) {
        this.pending.delete(id);
        this.deadlines.settle(pending);
        reject(new FloodgateError('STORE_ERROR', `the cluster store's channel failed: ${String(err)}`, 'store'));
      }
    });
  }

  /** close rejects every call still waiting and stops listening; later calls reject with `LIMITER_CLOSED`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stop();
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      if (this.deadlines.settle(p))
        p.reject(new FloodgateError('LIMITER_CLOSED', 'the cluster store was closed', 'store'));
    }
  }

  private settle(reply: ClusterReply): void {
    const p = this.pending.get(reply.id);
    if (p === undefined) return;
    this.pending.delete(reply.id);
    if (!this.deadlines.settle(p)) return;
    if (reply.error !== undefined) p.reject(errorOf(reply.error));
    else p.resolve(reply.value);
  }
}
