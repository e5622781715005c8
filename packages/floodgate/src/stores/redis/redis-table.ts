import type { Algorithm } from '../../core/algorithm.js';
import type { Clock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import { FloodgateError, describeValue } from '../../core/errors.js';
import type { Observer } from '../../core/events.js';
import type { PolicyStore } from '../store.js';
import { batchFieldsOf, type DecisionOp, type BatchPolicy, type BatchRequest, type Batcher } from './batcher.js';
import type { ConsumeAllEntry } from './consume-all.js';
import { FailurePolicy, type OnError } from './failure-policy.js';
import { policyIdOf, redisKeyOf } from './key-layout.js';
import { OverLimitCache } from './over-limit-cache.js';
import { PendingDecision, type DecisionOwner } from './pending-decision.js';
import { WriteBack } from './write-back.js';
import { parseDecisionAt, replyError, textOf, type ScriptRunner } from './runner.js';
import { DECIDE_SCRIPTS, luaPolicyOf, type LuaPolicy, type LuaScript } from './scripts/index.js';

/** How long a call cut off at its deadline may stay out before a write-back no longer waits for it, in ms. */
const WRITE_BACK_GRACE_MS = 2000;

/** TableContext is what a {@link RedisTable} shares with its store: where scripts go, and how keys are named and timed. */
export interface TableContext {
  readonly runner: ScriptRunner;
  readonly batcher: Batcher | undefined;
  readonly prefix: string;
  readonly maxKeyLength: number;
  readonly testTime: boolean;
  /** Keys the over-limit cache of each table holds (0: no cache). */
  readonly overLimitCacheMaxKeys: number;
  /** How long until Redis is next tried for `redisKey`, in ms: the next probe of the circuit guarding it (its node's, on a cluster). */
  readonly retryInMs: (redisKey: string) => number;
  /** The store's local clock: the over-limit cache, the local fallback, events. */
  readonly clock: Clock;
  /** The store's observer, or undefined when nothing listens. */
  readonly observer: Observer | undefined;
  /** How many processes share the store now (its census), for the local fallback's share. */
  readonly nodes: () => number;
  /** censusNeeded tells the store's census that a table takes its fallback's share from it. */
  readonly censusNeeded: () => void;
  /** Whether what the failure policy admits is charged to Redis once it answers again. */
  readonly writeBack: boolean;
}

/**
 * RedisTable is one policy's keys in a {@link RedisStore}: an asynchronous {@link PolicyStore}
 * whose every method is one script run (consume and peek may share a batch script with others of
 * the same tick). Bad costs and keys reject with the same typed errors as the memory store's,
 * before anything is sent. Refusals are answered from an {@link OverLimitCache} while certain, and
 * Redis failures are handled by the table's {@link OnError}.
 */
export class RedisTable implements PolicyStore {
  readonly synchronous = false;
  /** Always true: `timeoutMs` and `onError` decide failures here, so a Limiter adds no deadline or policy of its own. */
  readonly decidesFailures = true;
  /** True outside test mode: decisions are made on Redis's clock, so `nowMs` may be NaN (see {@link PolicyStore.ownsClock}). */
  readonly ownsClock: boolean;
  private readonly script: LuaScript;
  private readonly lua: LuaPolicy;
  private readonly policyId: string;
  private readonly paramArgs: readonly string[];
  /** This policy as the batch script takes it; every batched decision points to it. */
  private readonly batchPolicy: BatchPolicy;
  private readonly cache: OverLimitCache | undefined;
  private readonly failure: FailurePolicy;
  /**
   * What the failure policy admitted while Redis was away, owed to Redis; undefined when nothing is written back.
   * @internal Plumbing between the store's parts, not for users: left out of the API reference.
   */
  readonly writeBack: WriteBack | undefined;
  /** Where this table's pending decisions report Redis's answers. */
  private readonly owner: DecisionOwner = {
    answered: (pending, decision) => this.answered(pending, decision),
    failed: (pending, error) => this.failed(pending, error),
    late: (pending, decision) => {
      if (pending.owed && decision.allowed) this.writeBack?.ranOnRedis(pending.key, pending.cost);
    },
  };

  /**
   * Creates the table from the store's shared parts.
   * @internal Made by {@link RedisStore.bind}, which is what users call: left out of the API reference.
   */
  constructor(
    readonly algorithm: Algorithm,
    private readonly context: TableContext,
    onError: OnError,
  ) {
    this.ownsClock = !context.testTime;
    this.lua = luaPolicyOf(algorithm);
    this.script = DECIDE_SCRIPTS[this.lua.module];
    this.policyId = policyIdOf(algorithm);
    this.paramArgs = this.lua.params.map(String);
    this.batchPolicy = {
      batchFields: batchFieldsOf(this.lua),
      limit: algorithm.limit,
      sendAlone: (request) => this.sendAlone(request),
    };
    const cacheKeys = context.testTime ? 0 : context.overLimitCacheMaxKeys;
    this.cache = cacheKeys > 0 ? new OverLimitCache(cacheKeys, context.clock) : undefined;
    this.failure = new FailurePolicy({
      onError,
      algorithm,
      retryInMs: (key) => context.retryInMs(redisKeyOf(context.prefix, this.policyId, key)),
      clock: context.clock,
      observer: context.observer,
      nodes: context.nodes,
    });
    if (typeof onError === 'object' && onError.share === undefined && onError.nodes === undefined)
      context.censusNeeded();
    const admitsOnFailure = onError !== 'throw' && onError !== 'fail-closed';
    this.writeBack =
      context.writeBack && admitsOnFailure
        ? new WriteBack({
            maxKeys: typeof onError === 'object' ? (onError.maxKeys ?? 100_000) : 100_000,
            charge: (key, cost) => this.call('charge', key, cost, NaN, 0),
            ready: () => context.runner.quiet(WRITE_BACK_GRACE_MS),
          })
        : undefined;
    // Any answer from Redis (a batch of another policy, a consumeAll) says it is back.
    const writeBack = this.writeBack;
    if (writeBack !== undefined) context.runner.answers(() => writeBack.flush());
    if (algorithm.reserve === undefined) this.reserve = undefined;
  }

  /**
   * consume resolves to the decision for `cost` on `key`, charged only when admitted. A refusal
   * the over-limit cache is sure of comes as an already-resolved promise: no I/O, no batch.
   */
  consume(key: string, cost: number, nowMs: number): Promise<Decision> {
    return this.decide('consume', key, cost, nowMs);
  }

  /** peek resolves to what `consume` would answer, charging nothing (a cached refusal resolves at once). */
  peek(key: string, cost: number, nowMs: number): Promise<Decision> {
    return this.decide('peek', key, cost, nowMs);
  }

  /** refund gives `cost` back to `key`, never above the limit; a key at rest is left alone. */
  async refund(key: string, cost: number, nowMs: number): Promise<void> {
    this.algorithm.checkCost(cost);
    this.cache?.forget(key);
    const sent = this.call('refund', key, cost, nowMs, 0);
    let reply: unknown;
    try {
      reply = await sent;
    } catch (error) {
      return this.failure.refund(key, cost, nowMs, error);
    }
    this.cache?.forget(key);
    this.done('refund', reply);
  }

  /** reset deletes `key`'s state, so its next request sees a fresh key; it rejects when Redis fails, whatever the policy. */
  async reset(key: string): Promise<void> {
    this.cache?.forget(key);
    let reply: unknown;
    try {
      reply = await this.call('reset', key, 0, 0, 0);
    } catch (error) {
      if (!(error instanceof FloodgateError && error.code === 'INVALID_KEY')) this.failure.rejected(error);
      throw error;
    }
    this.cache?.forget(key);
    this.done('reset', reply);
  }

  /** reserve books `cost` now or later and resolves to the ms to wait, or -1 (nothing charged) past `maxWaitMs`. */
  async reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): Promise<number> {
    this.algorithm.checkCost(cost);
    let owed = false;
    const late = (lateReply: unknown): void => {
      if (owed && textOf(lateReply) !== '-1') this.writeBack?.ranOnRedis(key, cost);
    };
    const sent = this.call('reserve', key, cost, nowMs, maxWaitMs, late);
    let reply: unknown;
    try {
      reply = await sent;
    } catch (error) {
      const waitMs = this.failure.reserve(key, cost, nowMs, maxWaitMs, error);
      if (waitMs >= 0 && this.writeBack !== undefined) {
        this.writeBack.admitted(key, cost);
        owed = true;
      }
      return waitMs;
    }
    this.recovered();
    const text = textOf(reply);
    if (text === undefined || !/^(-1|0|[1-9][0-9]*)$/.test(text))
      throw replyError(this.what('reserve'), 'a whole number of ms or "-1"', reply);
    return Number(text);
  }

  /** entryOf returns what `consumeAll` needs to run a request on `key` (the key is checked). */
  entryOf(key: string): ConsumeAllEntry {
    return {
      key,
      redisKey: this.redisKey(key),
      lua: this.lua,
      algorithm: this.algorithm,
      batchPolicy: this.batchPolicy,
      table: this,
    };
  }

  /** Answers from the over-limit cache when it is sure, else asks Redis; bad arguments reject. */
  private decide(op: DecisionOp, key: string, cost: number, nowMs: number): Promise<Decision> {
    let time: string;
    try {
      this.algorithm.checkCost(cost);
      this.checkKey(key);
      const cached = this.cache?.refusal(key, cost);
      if (cached !== undefined) return Promise.resolve(cached);
      time = this.timeArg(nowMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const sentAtMs = this.cache === undefined ? 0 : this.context.clock.now();
    const pending = new PendingDecision(
      this.owner,
      this.batchPolicy,
      redisKeyOf(this.context.prefix, this.policyId, key),
      op,
      time,
      cost,
      key,
      nowMs,
      sentAtMs,
    );
    const batcher = this.context.batcher;
    if (batcher === undefined) this.sendAlone(pending);
    else batcher.submit(pending);
    return pending.promise;
  }

  /** Redis answered: the local fallback stands down, and what it admitted is written back. */
  private recovered(): void {
    this.failure.recovered();
    this.writeBack?.flush();
  }

  /** Settles a pending decision with Redis's answer, remembering a refusal in the over-limit cache. */
  private answered(pending: PendingDecision, decision: Decision): void {
    this.recovered();
    if (!decision.allowed) this.cache?.remember(pending.key, pending.cost, decision, pending.sentAtMs);
    pending.resolve(decision);
  }

  /** Settles a pending decision Redis did not make: a malformed reply rejects, anything else goes to the failure policy. */
  private failed(pending: PendingDecision, error: unknown): void {
    if (error instanceof FloodgateError && error.code === 'STORE_REPLY') {
      this.failure.rejected(error);
      return pending.reject(error);
    }
    let decision: Decision;
    try {
      decision = this.failure.decide(pending.op, pending.key, pending.cost, pending.nowMs, error);
    } catch (thrown) {
      return pending.reject(thrown);
    }
    if (pending.op === 'consume' && decision.allowed && this.writeBack !== undefined) {
      this.writeBack.admitted(pending.key, pending.cost);
      pending.owed = true;
    }
    pending.resolve(decision);
  }

  /** Sends one consume or peek as its own script. */
  private sendAlone(request: BatchRequest): void {
    const args = [this.lua.registered, request.op, request.time, String(request.cost), '0', ...this.paramArgs];
    const late = (reply: unknown): void => {
      const decision =
        Array.isArray(reply) && reply.length === 4 ? parseDecisionAt(reply, 0, this.algorithm.limit) : undefined;
      if (decision !== undefined) request.late?.(decision);
    };
    this.context.runner.run(this.script, [request.redisKey], args, request.op, late).then(
      (reply) => {
        let decision: Decision;
        try {
          decision = this.decision(request.op, reply);
        } catch (error) {
          return request.failed(error);
        }
        request.answered(decision);
      },
      (error: unknown) => request.failed(error),
    );
  }

  /** timeArg returns the script's time argument: `nowMs` (NaN: the store's clock) in test mode, else '' (the script reads TIME). */
  private timeArg(nowMs: number): string {
    if (!this.context.testTime) return '';
    if (Number.isNaN(nowMs)) return String(this.context.clock.now());
    if (!Number.isFinite(nowMs))
      throw new FloodgateError(
        'INVALID_OPTION',
        `nowMs must be a finite number in unsafeTestTime mode, got ${describeValue(nowMs)}`,
        'nowMs',
      );
    return String(nowMs);
  }

  private call(
    op: string,
    key: string,
    cost: number,
    nowMs: number,
    maxWaitMs: number,
    late?: (reply: unknown) => void,
  ): Promise<unknown> {
    const args = [this.lua.registered, op, this.timeArg(nowMs), String(cost), String(maxWaitMs), ...this.paramArgs];
    return this.context.runner.run(this.script, [this.redisKey(key)], args, op, late);
  }

  private checkKey(key: string): void {
    if (typeof key !== 'string' || key.length === 0 || key.length > this.context.maxKeyLength) {
      const what =
        typeof key === 'string'
          ? key.length === 0
            ? 'the empty string'
            : `a string of ${key.length} code units`
          : describeValue(key);
      throw new FloodgateError(
        'INVALID_KEY',
        `key must be a non-empty string of at most ${this.context.maxKeyLength} code units (RedisStore.maxKeyLength), got ${what}`,
        'key',
      );
    }
  }

  private redisKey(key: string): string {
    this.checkKey(key);
    return redisKeyOf(this.context.prefix, this.policyId, key);
  }

  private decision(op: string, reply: unknown): Decision {
    const decision =
      Array.isArray(reply) && reply.length === 4 ? parseDecisionAt(reply, 0, this.algorithm.limit) : undefined;
    if (decision === undefined)
      throw replyError(this.what(op), '[allowed, remaining, retryAfterMs, resetMs] as whole numbers', reply);
    return decision;
  }

  private done(op: string, reply: unknown): void {
    if (reply !== 1) throw replyError(this.what(op), 'the integer 1', reply);
  }

  private what(op: string): string {
    return `the ${this.script.name} script (${op})`;
  }
}
