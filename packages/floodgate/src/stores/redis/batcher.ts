import type { Decision } from '../../core/decision.js';
import { FloodgateError } from '../../core/errors.js';
import { hashSlotOf } from './key-layout.js';
import { hintFor, parseDecisionAt, replyError, textOf, type ScriptRunner } from './runner.js';
import { BATCH_SCRIPT } from './scripts/index.js';

/** DecisionOp is what a lone decision does: charge when admitted, or only look. */
export type DecisionOp = 'consume' | 'peek';

/** BatchOp is what a batched decision does: a {@link DecisionOp}, or `all` for a member of a group decided all or nothing (see {@link Batcher.submitGroup}). */
export type BatchOp = DecisionOp | 'all';

/**
 * BatchPolicy is a policy as the batch script takes it, and how to send a decision of it alone.
 * A table makes one and reuses it for every decision, so a batch names each policy once.
 */
export interface BatchPolicy {
  /** The batch script's four policy slots: algorithm and three params ('0' where unused). */
  readonly batchArgs: readonly string[];
  /** The policy's limit, for the decisions read from the reply. */
  readonly limit: number;
  /** sendAlone sends one decision as its own script and answers it: a tick with a single decision needs no batch. */
  sendAlone(request: BatchRequest): void;
}

/**
 * BatchRequest is one decision (consume or peek) waiting to be sent, and where its answer goes:
 * exactly one of `answered` or `failed` is called, once. Requests are objects with methods rather
 * than promises with callbacks, so a batch holds one thing per decision and makes no closures.
 */
export interface BatchRequest {
  readonly policy: BatchPolicy;
  readonly redisKey: string;
  readonly op: BatchOp;
  /** The script's time argument: '' (the server's TIME) or the test time. */
  readonly time: string;
  readonly cost: number;
  /** answered hands the request the decision Redis made. */
  answered(decision: Decision): void;
  /** failed hands the request what stopped it: its batch's failure, or its own script error. */
  failed(error: unknown): void;
  /** late hands the request the decision Redis made after the request had failed at its deadline (it ran after all). */
  late?(decision: Decision): void;
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
 * The tick's requests wait in one flat array: nothing else is kept per decision. Batches are
 * flushed by `setImmediate`: one callback per tick with decisions, none when idle.
 */
export class Batcher {
  private requests: BatchRequest[] = [];
  /** The tick's units in order, by size: 1 for a lone decision, N for a group of N. */
  private units: number[] = [];
  private readonly flushNow = (): void => this.flush();

  /** Creates an empty batcher. */
  constructor(private readonly options: BatcherOptions) {}

  /** submit queues `request` for this tick's batch; it is answered through its own methods. */
  submit(request: BatchRequest): void {
    if (this.requests.length === 0) setImmediate(this.flushNow);
    this.requests.push(request);
    this.units.push(1);
  }

  /**
   * submitGroup queues one request's limits (each with op `all`), decided all or nothing in this
   * tick's batch: charged only when every one admits. On a cluster every member must share a hash
   * slot. Each member is answered (or failed) with the others, in one turn.
   */
  submitGroup(members: readonly BatchRequest[]): void {
    if (this.requests.length === 0) setImmediate(this.flushNow);
    for (const member of members) this.requests.push(member);
    this.units.push(members.length);
  }

  private flush(): void {
    const requests = this.requests;
    const units = this.units;
    this.requests = [];
    this.units = [];
    if (units.length === 1 && requests.length === 1 && requests[0]!.op !== 'all')
      return requests[0]!.policy.sendAlone(requests[0]!);
    if (!this.options.cluster) return this.sendAll(requests, units);
    for (const slot of slotsOf(requests, units)) this.sendAll(slot.requests, slot.units);
  }

  /** Sends `requests` in scripts of at most `maxBatchSize` decisions (a group is never split). */
  private sendAll(requests: BatchRequest[], units: readonly number[]): void {
    const size = this.options.maxBatchSize;
    if (requests.length <= size) return this.send(requests, units);
    let from = 0;
    let chunk: number[] = [];
    let count = 0;
    for (const unit of units) {
      if (count > 0 && count + unit > size) {
        this.send(requests.slice(from, from + count), chunk);
        from += count;
        chunk = [];
        count = 0;
      }
      chunk.push(unit);
      count += unit;
    }
    this.send(requests.slice(from, from + count), chunk);
  }

  private send(requests: readonly BatchRequest[], units: readonly number[]): void {
    if (units.length === 1 && requests.length === 1 && requests[0]!.op !== 'all')
      return requests[0]!.policy.sendAlone(requests[0]!);
    const { keys, args } = batchArgsOf(requests, units);
    this.options.runner
      .run(BATCH_SCRIPT, keys, args, 'batch', (reply) => settleLate(requests, reply))
      .then(
        (reply) => settle(requests, reply),
        (error: unknown) => {
          for (const request of requests) request.failed(error);
        },
      );
  }
}

/** batchArgsOf returns the batch script's keys and arguments: each policy once, then 4 slots per decision. */
function batchArgsOf(requests: readonly BatchRequest[], units: readonly number[]): { keys: string[]; args: string[] } {
  const policies: BatchPolicy[] = [];
  const keys = new Array<string>(requests.length);
  const tail = new Array<string>(4 * requests.length);
  let last: BatchPolicy | undefined;
  let number = '';
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!;
    if (request.policy !== last) {
      last = request.policy;
      let at = policies.indexOf(last);
      if (at < 0) at = policies.push(last) - 1;
      number = String(at + 1);
    }
    keys[i] = request.redisKey;
    tail[4 * i] = number;
    tail[4 * i + 1] = request.op === 'all' ? 'and' : request.op;
    tail[4 * i + 2] = request.time;
    tail[4 * i + 3] = String(request.cost);
  }
  // A group's first member says how many follow it: `allN`.
  for (let u = 0, at = 0; u < units.length; at += units[u]!, u++)
    if (requests[at]!.op === 'all') tail[4 * at + 1] = `all${units[u]}`;
  const args = [String(policies.length)];
  for (const policy of policies) args.push(...policy.batchArgs);
  return { keys, args: args.concat(tail) };
}

/** Returns `requests` grouped by hash slot (a group's by its first member's), in order within each slot. */
function slotsOf(
  requests: readonly BatchRequest[],
  units: readonly number[],
): Array<{ requests: BatchRequest[]; units: number[] }> {
  const bySlot = new Map<number, { requests: BatchRequest[]; units: number[] }>();
  let at = 0;
  for (const unit of units) {
    const slot = hashSlotOf(requests[at]!.redisKey);
    let group = bySlot.get(slot);
    if (group === undefined) bySlot.set(slot, (group = { requests: [], units: [] }));
    for (let i = at; i < at + unit; i++) group.requests.push(requests[i]!);
    group.units.push(unit);
    at += unit;
  }
  return [...bySlot.values()];
}

/** Hands each decision its own answer, or its own error. */
function settle(requests: readonly BatchRequest[], reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== 4 * requests.length) {
    const error = replyError('the batch script', `4 fields per decision for ${requests.length} decisions`, reply);
    for (const request of requests) request.failed(error);
    return;
  }
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!;
    const decision = parseDecisionAt(reply, 4 * i, request.policy.limit);
    if (decision !== undefined) request.answered(decision);
    else request.failed(batchError(request, reply, 4 * i));
  }
}

/** Hands each decision that came after its deadline the decision Redis made for it. */
function settleLate(requests: readonly BatchRequest[], reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== 4 * requests.length) return;
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!;
    const decision = parseDecisionAt(reply, 4 * i, request.policy.limit);
    if (decision !== undefined) request.late?.(decision);
  }
}

/** The error of one decision of a batch: its script failure ('E', message), or a reply not kept to the promise. */
function batchError(request: BatchRequest, reply: readonly unknown[], offset: number): FloodgateError {
  if (textOf(reply[offset]) !== 'E') {
    return replyError(
      `the batch script (${request.op} on ${request.redisKey})`,
      '[allowed, remaining, retryAfterMs, resetMs]',
      reply.slice(offset, offset + 4),
    );
  }
  const cause = new Error(textOf(reply[offset + 1]) ?? 'unknown error');
  const error = new FloodgateError(
    'STORE_ERROR',
    `RedisStore: the batch script failed for ${request.redisKey}: ${cause.message}${hintFor(cause.message)}`,
  );
  error.cause = cause;
  return error;
}
