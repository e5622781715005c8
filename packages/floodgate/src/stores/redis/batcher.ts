import { FloodgateError } from '../../core/errors.js';
import { hashSlotOf } from './key-layout.js';
import { replyError, textOf, type ScriptRunner } from './runner.js';
import { BATCH_SCRIPT, type LuaScript } from './scripts/index.js';

/** BatchRequest is one decision (consume or peek) waiting to be sent. */
export interface BatchRequest {
  readonly redisKey: string;
  /** The decision's 7 batch-script arguments: algorithm, op, time, cost, three params. */
  readonly batchArgs: readonly string[];
  /** How to send it alone, when it is the only one of its tick: its own script and arguments. */
  readonly script: LuaScript;
  readonly args: readonly string[];
}

interface Pending {
  readonly request: BatchRequest;
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** BatcherOptions configures a {@link Batcher}. */
export interface BatcherOptions {
  readonly runner: ScriptRunner;
  /** True on a Redis Cluster: only decisions of one hash slot share a script. */
  readonly cluster: boolean;
  /** Most decisions in one script; more are split into several scripts sent together. */
  readonly maxBatchSize: number;
}

/**
 * Batcher gathers the decisions issued in one tick of the event loop and sends them as one
 * EVALSHA of the batch script per hash slot (one per tick on a single Redis), instead of one round
 * trip each, so one process is not held to one decision per round trip. Each decision is still
 * atomic, and decisions run in the order they were issued. A decision alone in its tick is sent
 * as its own script, exactly as without batching.
 *
 * Batches are flushed by `setImmediate`: one callback per tick with decisions, none when idle.
 */
export class Batcher {
  private queue: Pending[] = [];
  private scheduled = false;

  /** Creates an empty batcher. */
  constructor(private readonly options: BatcherOptions) {}

  /** submit resolves to the decision's reply, as its own script would answer: four strings. */
  submit(request: BatchRequest): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const queue = this.queue;
    this.queue = [];
    this.scheduled = false;
    for (const group of this.groups(queue)) {
      for (let i = 0; i < group.length; i += this.options.maxBatchSize) this.send(group.slice(i, i + this.options.maxBatchSize));
    }
  }

  private groups(queue: Pending[]): Pending[][] {
    if (!this.options.cluster || queue.length === 1) return [queue];
    const bySlot = new Map<number, Pending[]>();
    for (const pending of queue) {
      const slot = hashSlotOf(pending.request.redisKey);
      const group = bySlot.get(slot);
      if (group === undefined) bySlot.set(slot, [pending]);
      else group.push(pending);
    }
    return [...bySlot.values()];
  }

  private send(batch: readonly Pending[]): void {
    const runner = this.options.runner;
    if (batch.length === 1) {
      const { request, resolve, reject } = batch[0]!;
      runner.run(request.script, [request.redisKey], request.args).then(resolve, reject);
      return;
    }
    const keys = batch.map((p) => p.request.redisKey);
    const args = batch.flatMap((p) => p.request.batchArgs);
    runner.run(BATCH_SCRIPT, keys, args).then(
      (reply) => settle(batch, reply),
      (error: unknown) => {
        for (const p of batch) p.reject(error);
      },
    );
  }
}

/** Hands each decision its four reply strings, or its own error. */
function settle(batch: readonly Pending[], reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== 4 * batch.length) {
    const error = replyError('the batch script', `4 strings per decision for ${batch.length} decisions`, reply);
    for (const p of batch) p.reject(error);
    return;
  }
  for (const [i, p] of batch.entries()) {
    const part = reply.slice(4 * i, 4 * i + 4);
    if (textOf(part[0]) !== 'E') {
      p.resolve(part);
      continue;
    }
    const cause = new Error(textOf(part[1]) ?? 'unknown error');
    const error = new FloodgateError('STORE_ERROR', `RedisStore: the batch script failed for ${p.request.redisKey}: ${cause.message}`);
    error.cause = cause;
    p.reject(error);
  }
}
