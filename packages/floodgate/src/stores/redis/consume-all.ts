import type { Algorithm } from '../../core/algorithm.js';
import type { Decision } from '../../core/decision.js';
import { FloodgateError } from '../../core/errors.js';
import type { BatchPolicy, BatchRequest, Batcher } from './batcher.js';
import { hashSlotOf } from './key-layout.js';
import { parseDecisionAt, replyError, type ScriptRunner } from './runner.js';
import { CONSUME_ALL_SCRIPT, type LuaPolicy } from './scripts/index.js';

/** ConsumeAllEntry is what `consumeAll` needs of one request's table. */
export interface ConsumeAllEntry {
  readonly key: string;
  readonly redisKey: string;
  readonly lua: LuaPolicy;
  readonly algorithm: Algorithm;
  /**
   * The table's policy as the batch script takes it.
   * @internal Plumbing between the store's parts, not for users: left out of the API reference.
   */
  readonly batchPolicy: BatchPolicy;
  /** The table the request belongs to: across slots, its peek looks first and its refund undoes a charge. */
  readonly table: {
    /** peek answers what consuming `cost` on `key` would at `nowMs`, charging nothing. */
    peek(key: string, cost: number, nowMs: number): Promise<Decision>;
    /** refund gives `cost` back to `key` at `nowMs`, undoing a charge of this request. */
    refund(key: string, cost: number, nowMs: number): Promise<void>;
  };
}

/** ConsumeAllRequest is one request of {@link RedisStore.consumeAll}: a policy, a key, a cost (default 1). */
export interface ConsumeAllRequest {
  readonly policy: Algorithm;
  readonly key: string;
  readonly cost?: number;
}

/**
 * ConsumeAllResult is the answer of {@link RedisStore.consumeAll}: `allowed` when every request was
 * admitted (and all were charged); otherwise nothing stays charged. `decisions[i]` is request i's
 * answer from its own policy, in order; when `allowed` is false, those that say allowed were
 * admitted on trial and not charged.
 */
export interface ConsumeAllResult {
  readonly allowed: boolean;
  readonly decisions: readonly Decision[];
}

/** ConsumeAllContext is what {@link consumeAll} takes from its store. */
export interface ConsumeAllContext {
  readonly runner: ScriptRunner;
  /** The store's batcher: a group joins the tick's batch script; undefined, it is a script of its own. */
  readonly batcher: Batcher | undefined;
  readonly cluster: boolean;
  /** The script's time argument: '' for Redis's TIME, else the test time. */
  readonly time: string;
  readonly entryOf: (policy: Algorithm, key: string) => ConsumeAllEntry;
}

interface Item {
  readonly index: number;
  readonly entry: ConsumeAllEntry;
  readonly cost: number;
}

/**
 * consumeAll runs {@link RedisStore.consumeAll}: one script when every key shares a slot (or the
 * server is not a cluster); across slots, a look at every limit first, then one script per slot
 * and a refund of the slots that admitted when another refused or failed.
 */
export function consumeAll(
  requests: readonly ConsumeAllRequest[],
  context: ConsumeAllContext,
): Promise<ConsumeAllResult> {
  let items: Item[];
  try {
    items = itemsOf(requests, context);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  if (items.length === 0) return Promise.resolve({ allowed: true, decisions: [] });
  const groups = context.cluster ? groupBySlot(items) : undefined;
  if (groups === undefined || groups.length === 1) return runGroup(items, context);
  return acrossSlots(items, groups, context);
}

/** Checks every request (policy, key, cost) before anything is sent. */
function itemsOf(requests: readonly ConsumeAllRequest[], context: ConsumeAllContext): Item[] {
  if (!Array.isArray(requests))
    throw new FloodgateError('INVALID_OPTION', 'consumeAll takes an array of { policy, key, cost? }', 'requests');
  return requests.map((request: ConsumeAllRequest | null | undefined, index): Item => {
    if (typeof request !== 'object' || request === null || typeof request.policy?.consume !== 'function') {
      throw new FloodgateError(
        'INVALID_OPTION',
        `consumeAll request ${index} must be { policy, key, cost? } with a policy such as tokenBucket(...)`,
        `requests[${index}]`,
      );
    }
    const entry = context.entryOf(request.policy, request.key);
    const cost = request.cost ?? 1;
    entry.algorithm.checkCost(cost);
    return { index, entry, cost };
  });
}

/**
 * Keys in several slots: every limit is peeked (batched per slot), and a request that any refuses
 * is refused having charged nothing. Only a request that every limit admitted on the peek is
 * charged, one script per slot; when another request took the room in between (or a slot failed),
 * the slots that charged are refunded at once.
 */
async function acrossSlots(
  items: readonly Item[],
  groups: readonly Item[][],
  context: ConsumeAllContext,
): Promise<ConsumeAllResult> {
  const nowMs = nowOf(context);
  const looked = await Promise.all(items.map(({ entry, cost }) => entry.table.peek(entry.key, cost, nowMs)));
  if (!looked.every((decision) => decision.allowed)) return { allowed: false, decisions: looked };
  const settled = await Promise.allSettled(groups.map((group) => runGroup(group, context)));
  const decisions: Decision[] = new Array<Decision>(items.length);
  let allowed = true;
  let failure: PromiseRejectedResult | undefined;
  for (const [g, group] of groups.entries()) {
    const answer = settled[g]!;
    if (answer.status === 'rejected') {
      failure ??= answer;
      allowed = false;
      continue;
    }
    allowed &&= answer.value.allowed;
    for (const [i, item] of group.entries()) decisions[item.index] = answer.value.decisions[i]!;
  }
  if (!allowed) await refundAdmitted(groups, settled, context);
  if (failure !== undefined) throw failure.reason;
  return { allowed, decisions };
}

function groupBySlot(items: readonly Item[]): Item[][] {
  const bySlot = new Map<number, Item[]>();
  for (const item of items) {
    const slot = hashSlotOf(item.entry.redisKey);
    const group = bySlot.get(slot);
    if (group === undefined) bySlot.set(slot, [item]);
    else group.push(item);
  }
  return [...bySlot.values()];
}

/** Runs one slot's requests all or nothing: in the tick's batch script, or as a script of its own. */
function runGroup(group: readonly Item[], context: ConsumeAllContext): Promise<ConsumeAllResult> {
  if (context.batcher !== undefined) return new BatchedGroup(group, context.time, context.batcher).promise;
  return runScript(group, context);
}

async function runScript(group: readonly Item[], context: ConsumeAllContext): Promise<ConsumeAllResult> {
  const keys = group.map((item) => item.entry.redisKey);
  const args = [context.time];
  for (const { entry, cost } of group) {
    const params = entry.lua.params.map(String);
    while (params.length < 3) params.push('0');
    args.push(entry.lua.registered, String(cost), ...params);
  }
  const reply = await context.runner.run(CONSUME_ALL_SCRIPT, keys, args, 'consumeAll');
  const expected = `['1'|'0', then 4 fields per request] for ${group.length} requests`;
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * group.length || (reply[0] !== '1' && reply[0] !== '0')) {
    throw replyError('the consume-all script', expected, reply);
  }
  const decisions = group.map((item, i) => {
    const decision = parseDecisionAt(reply, 1 + 4 * i, item.entry.algorithm.limit);
    if (decision === undefined) throw replyError('the consume-all script', expected, reply);
    return decision;
  });
  return { allowed: reply[0] === '1', decisions };
}

/** Gives back what the slots that admitted charged. */
async function refundAdmitted(
  groups: readonly Item[][],
  answers: ReadonlyArray<PromiseSettledResult<ConsumeAllResult>>,
  context: ConsumeAllContext,
): Promise<void> {
  const refunds: Array<Promise<void>> = [];
  for (const [g, group] of groups.entries()) {
    const answer = answers[g]!;
    if (answer.status !== 'fulfilled' || !answer.value.allowed) continue;
    for (const { entry, cost } of group) refunds.push(entry.table.refund(entry.key, cost, nowOf(context)));
  }
  const results = await Promise.allSettled(refunds);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) {
    const error = new FloodgateError(
      'STORE_ERROR',
      'RedisStore.consumeAll: a slot refused, and giving back the cost charged in another slot failed; the refusal stands, and that limit keeps the charge until it refills',
    );
    error.cause = failed.reason;
    throw error;
  }
}

/** The caller's time for the tables: the test time, or NaN (the tables decide on Redis's TIME). */
function nowOf(context: ConsumeAllContext): number {
  return context.time === '' ? Number.NaN : Number(context.time);
}

/**
 * BatchedGroup is one request's limits sent as a group of the tick's batch script (one round trip
 * for every request of the tick, groups and lone decisions alike), decided all or nothing there.
 */
class BatchedGroup {
  readonly promise: Promise<ConsumeAllResult>;
  private readonly decisions: Decision[];
  private answers = 0;
  private settled = false;
  private resolve!: (result: ConsumeAllResult) => void;
  private reject!: (error: unknown) => void;

  constructor(group: readonly Item[], time: string, batcher: Batcher) {
    this.decisions = new Array<Decision>(group.length);
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const members = new Array<GroupMember>(group.length);
    for (let i = 0; i < group.length; i++) members[i] = new GroupMember(this, i, group[i]!, time);
    batcher.submitGroup(members);
  }

  /** answered records member `i`'s decision; the last answer settles the group. */
  answered(i: number, decision: Decision): void {
    if (this.settled) return;
    this.decisions[i] = decision;
    if (++this.answers < this.decisions.length) return;
    this.settled = true;
    this.resolve({ allowed: this.decisions.every((d) => d.allowed), decisions: this.decisions });
  }

  /** failed rejects the group with its first failure. */
  failed(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(error);
  }
}

/** GroupMember is one limit of a {@link BatchedGroup}, as the batcher sends it. */
class GroupMember implements BatchRequest {
  readonly op = 'all';
  readonly policy: BatchPolicy;
  readonly redisKey: string;
  readonly cost: number;

  constructor(
    private readonly group: BatchedGroup,
    private readonly index: number,
    item: Item,
    readonly time: string,
  ) {
    this.policy = item.entry.batchPolicy;
    this.redisKey = item.entry.redisKey;
    this.cost = item.cost;
  }

  answered(decision: Decision): void {
    this.group.answered(this.index, decision);
  }

  failed(error: unknown): void {
    this.group.failed(error);
  }
}
