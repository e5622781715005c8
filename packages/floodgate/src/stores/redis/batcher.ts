import type { Decision } from '../../core/decision.js';
import { FloodgateError } from '../../core/errors.js';
import { BatchReply } from './batch-reply.js';
import { hashSlotOf } from './key-layout.js';
import { hintFor, replyError, type ScriptRunner } from './runner.js';
import type { ScriptReceiver } from './script-call.js';
import { BATCH_POLICY_ARGS, BATCH_SEPARATOR } from './scripts/drivers.js';
import { BATCH_SCRIPT, type LuaPolicy } from './scripts/index.js';

/** DecisionOp is what a lone decision does: charge when admitted, or only look. */
export type DecisionOp = 'consume' | 'peek';

/** BatchOp is what a batched decision does: a {@link DecisionOp}, or `all` for a member of a group decided all or nothing (see {@link Batcher.submitGroup}). */
export type BatchOp = DecisionOp | 'all';

/**
 * BatchPolicy is a policy as the batch script takes it, and how to send a decision of it alone.
 * A table makes one and reuses it for every decision, so a batch names each policy once.
 */
export interface BatchPolicy {
  /** The policy's fields in the batch script's argument: algorithm and three params ('0' where unused), each ended by the separator (see {@link batchFieldsOf}). */
  readonly batchFields: string;
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
    const { keys, fields } = batchArgsOf(requests, units);
    this.options.runner.send(BATCH_SCRIPT, keys, [fields], new Batch(requests), 'batch');
  }
}

/** Batch is one batch script's decisions, hearing how it ended: one object per script, no closures. */
class Batch implements ScriptReceiver {
  constructor(private readonly requests: readonly BatchRequest[]) {}

  /** answered hands each decision its own answer, or its own error. */
  answered(reply: unknown): void {
    settle(this.requests, reply);
  }

  /** failed hands every decision what stopped the script. */
  failed(error: unknown): void {
    for (const request of this.requests) request.failed(error);
  }

  /** late hands each decision that came after its deadline the decision Redis made for it. */
  late(reply: unknown): void {
    settleLate(this.requests, reply);
  }
}

/**
 * batchFieldsOf returns `policy`'s fields as the batch script's argument holds them: its algorithm
 * and three params ('0' where unused), each ended by the separator. A table builds it once.
 */
export function batchFieldsOf(policy: LuaPolicy): string {
  const fields = [policy.registered, ...policy.params.map(String)];
  while (fields.length < BATCH_POLICY_ARGS) fields.push('0');
  return fields
    .slice(0, BATCH_POLICY_ARGS)
    .map((field) => field + BATCH_SEPARATOR)
    .join('');
}

/**
 * batchArgsOf returns the batch script's keys, each once, and its one argument: the number of
 * policies and of decisions, each policy once, then 5 fields per decision, every field ended by
 * the separator.
 */
function batchArgsOf(requests: readonly BatchRequest[], units: readonly number[]): { keys: string[]; fields: string } {
  const policies: BatchPolicy[] = [];
  const keys: string[] = [];
  // Key numbers by key, made only once a batch names a second key: most batches name one or a few.
  let keyNumbers: Map<string, string> | undefined;
  let decisions = '';
  let number = '';
  let keyNumber = '';
  let last: BatchPolicy | undefined;
  let lastKey: string | undefined;
  for (let u = 0, at = 0; u < units.length; at += units[u]!, u++) {
    for (let i = at; i < at + units[u]!; i++) {
      const request = requests[i]!;
      if (request.policy !== last) {
        last = request.policy;
        let found = policies.indexOf(last);
        if (found < 0) found = policies.push(last) - 1;
        number = String(found + 1) + BATCH_SEPARATOR;
      }
      const key = request.redisKey;
      if (key !== lastKey) {
        if (lastKey === undefined) {
          keys.push(key);
          keyNumber = '1' + BATCH_SEPARATOR;
        } else {
          keyNumbers ??= new Map([[lastKey, keyNumber]]);
          let found = keyNumbers.get(key);
          if (found === undefined) keyNumbers.set(key, (found = String(keys.push(key)) + BATCH_SEPARATOR));
          keyNumber = found;
        }
        lastKey = key;
      }
      // A group's first member says how many follow it (`allN`); the others say `and`.
      const op = request.op !== 'all' ? request.op : i === at ? `all${units[u]}` : 'and';
      decisions +=
        number + keyNumber + op + BATCH_SEPARATOR + request.time + BATCH_SEPARATOR + request.cost + BATCH_SEPARATOR;
    }
  }
  let fields = policies.length + BATCH_SEPARATOR + requests.length + BATCH_SEPARATOR;
  for (const policy of policies) fields += policy.batchFields;
  return { keys, fields: fields + decisions };
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
  const answers = BatchReply.of(reply, requests.length);
  if (answers === undefined) {
    const error = replyError(
      'the batch script',
      `a string of 4 fields per decision for ${requests.length} decisions`,
      reply,
    );
    for (const request of requests) request.failed(error);
    return;
  }
  for (const request of requests) {
    const decision = answers.next(request.policy.limit);
    if (decision !== undefined) request.answered(decision);
    else request.failed(batchError(request, answers.fields()));
  }
}

/** Hands each decision that came after its deadline the decision Redis made for it. */
function settleLate(requests: readonly BatchRequest[], reply: unknown): void {
  const answers = BatchReply.of(reply, requests.length);
  if (answers === undefined) return;
  for (const request of requests) {
    const decision = answers.next(request.policy.limit);
    if (decision !== undefined) request.late?.(decision);
  }
}

/** The error of one decision of a batch: its script failure (`E`, message), or fields not kept to the promise. */
function batchError(request: BatchRequest, fields: readonly string[]): FloodgateError {
  if (fields[0] !== 'E') {
    return replyError(
      `the batch script (${request.op} on ${request.redisKey})`,
      '[allowed, remaining, retryAfterMs, resetMs]',
      fields,
    );
  }
  const cause = new Error(fields[1] || 'unknown error');
  const error = new FloodgateError(
    'STORE_ERROR',
    `RedisStore: the batch script failed for ${request.redisKey}: ${cause.message}${hintFor(cause.message)}`,
  );
  error.cause = cause;
  return error;
}
