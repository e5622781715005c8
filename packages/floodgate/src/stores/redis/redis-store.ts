import type { Algorithm } from '../../core/algorithm.js';
import { systemClock, type Clock } from '../../core/clock.js';
import type { Decision } from '../../core/decision.js';
import { FloodgateError, describeValue } from '../../core/errors.js';
import { positiveInteger, positiveNumber, requireObject } from '../../core/validate.js';
import type { PolicyStore, Store } from '../store.js';
import type { RedisAdapter } from './adapter.js';
import { consumeAll, type ConsumeAllEntry, type ConsumeAllRequest, type ConsumeAllResult } from './consume-all.js';
import { policyIdOf, redisKeyOf } from './key-layout.js';
import { parseDecisionAt, replyError, ScriptRunner, textOf } from './runner.js';
import { DECIDE_SCRIPTS, luaPolicyOf, type LuaPolicy, type LuaScript } from './scripts/index.js';

/** RedisStoreOptions configures {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The client, through {@link ioredisAdapter} or {@link nodeRedisAdapter}. */
  adapter: RedisAdapter;
  /** Start of every key (default `floodgate:`); no `{` or `}`, so the user's key stays the hash tag. */
  prefix?: string;
  /** Longest key accepted, in UTF-16 code units (default 1024). */
  maxKeyLength?: number;
  /** How long an operation may wait for Redis before rejecting with `STORE_TIMEOUT`, in ms (default 1000). */
  timeoutMs?: number;
  /**
   * UNSAFE, FOR TESTS ONLY. When true, scripts use the caller's time (the `nowMs` each method is
   * given, or `clock` for {@link RedisStore.consumeAll}) instead of Redis's `TIME`, and keys live an
   * hour longer than their rest time because test times are not wall-clock times. Processes whose
   * clocks disagree would then disagree about every limit: never set it in production. Default false.
   */
  unsafeTestTime?: boolean;
  /** The clock `consumeAll` reads in test mode (default the system clock); only with `unsafeTestTime`. */
  clock?: Clock;
}

/** Where a store's tables send their scripts, and how they name and time them. */
interface StoreContext {
  readonly runner: ScriptRunner;
  readonly prefix: string;
  readonly maxKeyLength: number;
  readonly testTime: boolean;
}

/**
 * RedisStore keeps limiter state in Redis, so every process sharing a Redis shares every limit
 * exactly. Each decision is one Lua script run atomically on the server, with the same rule as the
 * memory store (a differential test keeps the Lua and the TS identical), using the server's `TIME`
 * as the clock: client clocks never matter. Keys carry a TTL ending when their state comes to rest,
 * so Redis forgets a key exactly when forgetting changes nothing.
 *
 * Tests only: `unsafeTestTime: true` makes the scripts take the caller's time instead of `TIME`
 * (see {@link RedisStoreOptions.unsafeTestTime}); never set it in production.
 *
 * Key layout: `${prefix}${algorithm}:${paramsHash}:{${key}}`; the user's key is the hash tag, so one
 * key's states under several policies share a Redis Cluster slot.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { Limiter, tokenBucket } from 'floodgate';
 * import { RedisStore, ioredisAdapter } from 'floodgate/redis';
 * const store = new RedisStore({ adapter: ioredisAdapter(new Redis()) });
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }), store });
 * const decision = await limiter.consume(userId);
 */
export class RedisStore implements Store {
  private readonly context: StoreContext;
  private readonly tables = new Map<Algorithm, RedisTable>();
  private readonly clock: Clock;
  private readonly cluster: boolean;

  /** Creates a store over `options.adapter`; it sends nothing to Redis until first used. */
  constructor(options: RedisStoreOptions) {
    const o = requireObject<RedisStoreOptions>(options, 'RedisStore');
    const adapter = checkAdapter(o.adapter);
    const testTime = optionalBoolean(o.unsafeTestTime, 'RedisStore.unsafeTestTime');
    if (o.clock !== undefined && !testTime) {
      throw new FloodgateError('INVALID_OPTION', 'RedisStore.clock is only read with unsafeTestTime: true; without it the clock is Redis\'s TIME', 'RedisStore.clock');
    }
    this.clock = o.clock ?? systemClock;
    this.cluster = adapter.cluster;
    this.context = {
      runner: new ScriptRunner(adapter, positiveNumber(o.timeoutMs ?? 1000, 'RedisStore.timeoutMs')),
      prefix: checkPrefix(o.prefix ?? 'floodgate:'),
      maxKeyLength: positiveInteger(o.maxKeyLength ?? 1024, 'RedisStore.maxKeyLength'),
      testTime,
    };
  }

  /** bind returns the table for `algorithm`, creating it on first use. */
  bind(algorithm: Algorithm): RedisTable {
    let table = this.tables.get(algorithm);
    if (table === undefined) {
      table = new RedisTable(algorithm, this.context);
      this.tables.set(algorithm, table);
    }
    return table;
  }

  /**
   * consumeAll decides several requests together, each on its own policy and key (say 10 per
   * second and 100 per minute for one user), and charges them only when every one is admitted.
   *
   * When all keys share a hash slot (always on a single Redis; on a cluster when the keys share a
   * hash tag, as one user key under several policies does) it is one script and one round trip:
   * all or nothing, atomically. On a cluster with keys in different slots it is two-phase: each
   * slot's requests are decided atomically, and when any slot refuses, the slots that admitted get
   * their cost refunded. No limit ever admits more than it allows; other requests may briefly see
   * the charge before its refund; and when a window boundary passes between charge and refund, the
   * refund of a windowed policy may return slightly more or less than was charged.
   *
   * `nowMs` is read only in test mode (`unsafeTestTime`), defaulting to the store's `clock`.
   *
   * @example
   * const perSecond = gcra({ rate: 10, periodMs: 1000, maxBurst: 9 });
   * const perMinute = fixedWindow({ limit: 100, windowMs: 60_000 });
   * const { allowed } = await store.consumeAll([{ policy: perSecond, key: user }, { policy: perMinute, key: user }]);
   */
  consumeAll(requests: readonly ConsumeAllRequest[], nowMs?: number): Promise<ConsumeAllResult> {
    let time = '';
    if (this.context.testTime) {
      const testMs = nowMs ?? this.clock.now();
      if (!Number.isFinite(testMs)) return Promise.reject(new FloodgateError('INVALID_OPTION', `nowMs must be a finite number in unsafeTestTime mode, got ${describeValue(testMs)}`, 'nowMs'));
      time = String(testMs);
    }
    return consumeAll(requests, {
      runner: this.context.runner,
      cluster: this.cluster,
      time,
      entryOf: (policy, key) => this.bind(policy).entryOf(key),
    });
  }
}

/**
 * RedisTable is one policy's keys in a {@link RedisStore}: an asynchronous {@link PolicyStore}
 * whose every method is one script run. Bad costs and keys reject with the same typed errors as the
 * memory store's, before anything is sent.
 */
export class RedisTable implements PolicyStore {
  readonly synchronous = false;
  private readonly script: LuaScript;
  private readonly lua: LuaPolicy;
  private readonly policyId: string;
  private readonly paramArgs: readonly string[];

  /** Creates the table; prefer {@link RedisStore.bind}. */
  constructor(
    readonly algorithm: Algorithm,
    private readonly context: StoreContext,
  ) {
    this.lua = luaPolicyOf(algorithm);
    this.script = DECIDE_SCRIPTS[this.lua.module];
    this.policyId = policyIdOf(algorithm);
    this.paramArgs = this.lua.params.map(String);
    if (algorithm.reserve === undefined) this.reserve = undefined;
  }

  /** consume resolves to the decision for `cost` on `key`, charged only when admitted. */
  async consume(key: string, cost: number, nowMs: number): Promise<Decision> {
    this.algorithm.checkCost(cost);
    return this.decision('consume', await this.call('consume', key, cost, nowMs, 0));
  }

  /** peek resolves to what `consume` would answer, charging nothing. */
  async peek(key: string, cost: number, nowMs: number): Promise<Decision> {
    this.algorithm.checkCost(cost);
    return this.decision('peek', await this.call('peek', key, cost, nowMs, 0));
  }

  /** refund gives `cost` back to `key`, never above the limit; a key at rest is left alone. */
  async refund(key: string, cost: number, nowMs: number): Promise<void> {
    this.algorithm.checkCost(cost);
    this.done('refund', await this.call('refund', key, cost, nowMs, 0));
  }

  /** reset deletes `key`'s state, so its next request sees a fresh key. */
  async reset(key: string): Promise<void> {
    this.done('reset', await this.call('reset', key, 0, 0, 0));
  }

  /** reserve books `cost` now or later and resolves to the ms to wait, or -1 (nothing charged) past `maxWaitMs`. */
  async reserve?(key: string, cost: number, nowMs: number, maxWaitMs: number): Promise<number> {
    this.algorithm.checkCost(cost);
    const reply = await this.call('reserve', key, cost, nowMs, maxWaitMs);
    const text = textOf(reply);
    if (text === undefined || !/^(-1|0|[1-9][0-9]*)$/.test(text)) throw replyError(this.what('reserve'), 'a whole number of ms or "-1"', reply);
    return Number(text);
  }

  /** entryOf returns what `consumeAll` needs to run a request on `key` (the key is checked). */
  entryOf(key: string): ConsumeAllEntry {
    return { key, redisKey: this.redisKey(key), lua: this.lua, algorithm: this.algorithm, table: this };
  }

  /** timeArg returns the script's time argument: `nowMs` in test mode, else '' (the script reads TIME). */
  private timeArg(nowMs: number): string {
    if (!this.context.testTime) return '';
    if (!Number.isFinite(nowMs)) throw new FloodgateError('INVALID_OPTION', `nowMs must be a finite number in unsafeTestTime mode, got ${describeValue(nowMs)}`, 'nowMs');
    return String(nowMs);
  }

  private call(op: string, key: string, cost: number, nowMs: number, maxWaitMs: number): Promise<unknown> {
    const args = [this.lua.registered, op, this.timeArg(nowMs), String(cost), String(maxWaitMs), ...this.paramArgs];
    return this.context.runner.run(this.script, [this.redisKey(key)], args);
  }

  private redisKey(key: string): string {
    if (typeof key !== 'string' || key.length > this.context.maxKeyLength) {
      const what = typeof key === 'string' ? `a string of ${key.length} code units` : describeValue(key);
      throw new FloodgateError('INVALID_KEY', `key must be a string of at most ${this.context.maxKeyLength} code units (RedisStore.maxKeyLength), got ${what}`, 'key');
    }
    return redisKeyOf(this.context.prefix, this.policyId, key);
  }

  private decision(op: string, reply: unknown): Decision {
    const decision = Array.isArray(reply) && reply.length === 4 ? parseDecisionAt(reply, 0, this.algorithm.limit) : undefined;
    if (decision === undefined) throw replyError(this.what(op), '[allowed, remaining, retryAfterMs, resetMs] as strings', reply);
    return decision;
  }

  private done(op: string, reply: unknown): void {
    if (reply !== 1) throw replyError(this.what(op), 'the integer 1', reply);
  }

  private what(op: string): string {
    return `the ${this.script.name} script (${op})`;
  }
}

function checkAdapter(adapter: unknown): RedisAdapter {
  const a = adapter as Partial<RedisAdapter> | null | undefined;
  if (typeof a !== 'object' || a === null || typeof a.evalsha !== 'function' || typeof a.eval !== 'function' || typeof a.cluster !== 'boolean') {
    throw new FloodgateError('INVALID_OPTION', `RedisStore.adapter must be a RedisAdapter, e.g. ioredisAdapter(new Redis()) or nodeRedisAdapter(client), got ${describeValue(adapter)}`, 'RedisStore.adapter');
  }
  return a as RedisAdapter;
}

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new FloodgateError('INVALID_OPTION', `RedisStore.prefix must be a string without { or } (the key is the hash tag), got ${describeValue(prefix)}`, 'RedisStore.prefix');
  }
  return prefix;
}

function optionalBoolean(value: unknown, option: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new FloodgateError('INVALID_OPTION', `${option} must be true or false, got ${describeValue(value)}`, option);
  return value;
}
