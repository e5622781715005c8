import type { Algorithm } from '../../core/algorithm.js';
import { monotonicClock, systemClock, type Clock } from '../../core/clock.js';
import { FloodgateError, describeValue } from '../../core/errors.js';
import { notify, type Observer } from '../../core/events.js';
import { isTimers, systemTimers, type Timers } from '../../core/timers.js';
import { positiveInteger, positiveNumber, requireObject } from '../../core/validate.js';
import type { Store } from '../store.js';
import type { RedisAdapter } from './adapter.js';
import { Batcher } from './batcher.js';
import { Circuit, type CircuitRouter, type CircuitState } from './circuit.js';
import { NodeCircuits } from './node-circuits.js';
import { consumeAll, type ConsumeAllContext, type ConsumeAllRequest, type ConsumeAllResult } from './consume-all.js';
import { checkRedisMemory, routingKeys, type RedisMemoryReport } from './memory-check.js';
import { checkOnError, DEFAULT_ON_ERROR, type OnError } from './failure-policy.js';
import { FleetCensus } from './fleet-census.js';
import { StoreTimeout, type StoreTimeoutOption } from '../../core/store-timeout.js';
import { RedisTable, type TableContext } from './redis-table.js';
import { ScriptRunner } from './runner.js';

/** RedisStoreOptions configures {@link RedisStore}. */
export interface RedisStoreOptions {
  /** The client, through {@link ioredisAdapter} or {@link nodeRedisAdapter}. */
  adapter: RedisAdapter;
  /** Start of every key (default `floodgate:`); no `{` or `}`, so the user's key stays the hash tag. */
  prefix?: string;
  /** Longest key accepted, in UTF-16 code units (default 1024). */
  maxKeyLength?: number;
  /**
   * How long an operation may wait for Redis before `onError` decides it (as a `STORE_TIMEOUT`):
   * by default adaptive, 3 × the p99 of Redis's recent answers between 25 and 250 ms (see
   * `AdaptiveTimeoutOptions`: `{ floorMs, p99Multiple, capMs }`), or a fixed number of ms.
   * It also bounds every call made while the client is still connecting (at the cap: nothing is
   * known of Redis before its first answer).
   */
  timeoutMs?: StoreTimeoutOption;
  /**
   * What every bound policy does when Redis fails or does not answer in time: see {@link OnError}.
   * The default, `{ fallback: 'local' }`, decides in this process with its share of each limit
   * (one over the processes seen on this Redis), so an outage of the limiter never becomes an
   * outage of the service, nor an unbounded flood on it. Decisions made by the policy say so in
   * `reason`. `'throw'` is the only policy under which a caller sees the error. For another policy
   * on some limiters, bind them to {@link RedisStore.withOnError}.
   */
  onError?: OnError;
  /**
   * Whether what `onError` admits while Redis is away (`fallback` and `fail-open` decisions) is
   * charged to Redis once it answers again, each key's total as one charge that takes what still
   * fits (default true): counts after an outage then tell the truth. Calls cut off at their
   * deadline that ran on Redis after all are not charged twice.
   */
  writeBack?: boolean;
  /**
   * Failures in a row (errors or timeouts) after which nothing more is sent until a probe succeeds
   * (default 3). On a cluster, counted per master: see {@link RedisStore}.
   */
  failuresToOpen?: number;
  /** How long after the circuit opens (or a probe fails) one operation is sent as a probe, in ms (default 250). */
  probeIntervalMs?: number;
  /**
   * Keys each bound policy remembers as refused until their retry time, to answer a flood from an
   * over-limit key without Redis (default 10,000; 0 turns the cache off; always off with
   * `unsafeTestTime`). See {@link OverLimitCache} for why its answers are exact.
   */
  overLimitCacheMaxKeys?: number;
  /**
   * Most consume and peek decisions sent in one batch script (default 128; 1 sends each decision
   * as its own script). Decisions issued in one tick share a script per hash slot.
   */
  maxBatchSize?: number;
  /**
   * UNSAFE, FOR TESTS ONLY. When true, scripts use the caller's time (the `nowMs` each method is
   * given, or `clock` for {@link RedisStore.consumeAll}) instead of Redis's `TIME`, and keys live an
   * hour longer than their rest time because test times are not wall-clock times. Processes whose
   * clocks disagree would then disagree about every limit: never set it in production. Default false.
   */
  unsafeTestTime?: boolean;
  /**
   * The local clock, in ms: the deadlines, the circuit's probe intervals, the over-limit cache and
   * the local fallback read it, and, in test mode only (`unsafeTestTime`), `consumeAll` sends it
   * as the scripts' time. Default: a monotonic clock (`performance.now()`, only durations are
   * measured), or the system clock in test mode. Decisions themselves are always timed by Redis,
   * outside test mode. Pass a `ManualClock` (with it as `timers`) to drive an outage in a test.
   */
  clock?: Clock;
  /**
   * Where the store sets its one deadline timer (default `systemTimers`; a `ManualClock` in tests).
   * The timer exists only while a call to Redis is in flight.
   */
  timers?: Timers;
  /**
   * Hears the store's events (see `Observer`): `storeCall` for every script call (one per batch),
   * `storeError` with the failure policy applied, `circuit` on each change of a circuit (per node
   * on a cluster), `fallback` when the local fallback takes over or stops. Free when absent.
   */
  observer?: Observer;
}

/**
 * StoreShares is what a limiter built on a {@link RedisStore} outside its tables (such as
 * `RedisSmoothLimiter`) shares with it: the runner of its scripts (connection health, circuits,
 * timeout, observer), its key prefix, time, failure policy and census.
 */
export interface StoreShares {
  /**
   * The runner of the store's scripts: connection health, circuits, deadlines.
   * @internal Plumbing between the store's parts, not for users: left out of the API reference.
   */
  readonly runner: ScriptRunner;
  readonly prefix: string;
  readonly testTime: boolean;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly onError: OnError;
  /** The store's observer (`storeError`, `fallback` and the runner's `storeCall`), or undefined. */
  readonly observer: Observer | undefined;
  /** How many processes share the store now (its census); call `censusNeeded` first for a live count. */
  readonly nodes: () => number;
  /** censusNeeded asks for a fresh count of the processes sharing the store, for `nodes` to read. */
  readonly censusNeeded: () => void;
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
 * Failures: every operation settles within `timeoutMs` (default 1000 ms). After `failuresToOpen`
 * failures in a row a circuit opens and nothing more is sent (so no queue of commands grows while
 * Redis is away) until a probe, one operation every `probeIntervalMs`, gets an answer. Meanwhile
 * `onError` decides (default `'fail-open'`): admit (`fail-open`), refuse (`fail-closed`), decide
 * locally with a share of the limit (`fallback`), or reject (`throw`). On a Redis Cluster there is a circuit per master (when the adapter
 * tells the store which node serves a slot, as both built-in adapters do), so a master that is
 * down or hung only sends its own keys to `onError`: keys on the other masters are still decided
 * by Redis, and after a failover the new master starts with a closed circuit. Floods: refusals
 * are remembered until their retry time and answered locally. Throughput: decisions issued in
 * one tick go to Redis as one script per hash slot. Time: deadlines, probe intervals and the
 * over-limit cache read the `clock` and `timers` options, so a `ManualClock` drives an outage in
 * a test; the `observer` option hears every round trip, error, circuit change and fallback.
 *
 * Memory: a Redis with `maxmemory` and an evicting policy (every `allkeys-*` and `volatile-*` one:
 * floodgate's keys carry a TTL) may evict a throttled key when full, and its limit then starts over;
 * no script can tell an evicted key from a fresh one. Give the store a Redis (or a database on a
 * dedicated instance) with `noeviction`, or memory that never fills, and call
 * {@link RedisStore.checkMemory} at start-up to find out. Under `noeviction` a full Redis still
 * refuses throttled keys by their own limit (a refusal writes nothing); what needs a write fails
 * with an OOM `STORE_ERROR` and `onError` decides (`'fail-closed'` holds every limit).
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
  private readonly context: TableContext;
  private readonly clock: Clock;
  private readonly cluster: boolean;
  private readonly tableOf: (algorithm: Algorithm) => RedisTable;
  private readonly adapter: RedisAdapter;
  private readonly onError: OnError;
  private readonly timers: Timers;
  /** What `consumeAll` takes on Redis's own clock (the time argument ''), built once. */
  private readonly liveContext: ConsumeAllContext;

  /** Creates a store over `options.adapter`; it sends nothing to Redis until first used. */
  constructor(options: RedisStoreOptions) {
    const o = requireObject<RedisStoreOptions>(options, 'RedisStore');
    const adapter = checkAdapter(o.adapter);
    const testTime = optionalBoolean(o.unsafeTestTime, 'RedisStore.unsafeTestTime');
    this.clock = checkClock(o.clock) ?? (testTime ? systemClock : monotonicClock);
    this.cluster = adapter.cluster;
    this.adapter = adapter;
    const onError = checkOnError(o.onError ?? DEFAULT_ON_ERROR, 'RedisStore.onError');
    this.onError = onError;
    this.timers = checkTimers(o.timers);
    this.context = contextOf(o, adapter, { testTime, clock: this.clock });
    this.tableOf = tablesOf(this.context, onError);
    this.liveContext = {
      runner: this.context.runner,
      batcher: this.context.batcher,
      cluster: this.cluster,
      time: '',
      entryOf: (policy, key) => this.bind(policy).entryOf(key),
    };
  }

  /** shares returns what a limiter built on this store outside its tables shares with it (see {@link StoreShares}). */
  shares(): StoreShares {
    const { runner, prefix, testTime, clock, nodes, censusNeeded, observer } = this.context;
    return {
      runner,
      prefix,
      testTime,
      clock,
      timers: this.timers,
      onError: this.onError,
      observer,
      nodes,
      censusNeeded,
    };
  }

  /** bind returns the table for `algorithm`, creating it on first use. */
  bind(algorithm: Algorithm): RedisTable {
    return this.tableOf(algorithm);
  }

  /**
   * withOnError returns a {@link Store} over the same Redis, connection health and batches as this
   * one, whose policies follow `onError` instead: one store, a failure policy per limiter.
   *
   * @example
   * const login = new Limiter({ policy: strict, store: store.withOnError('fail-closed') });
   * const search = new Limiter({ policy: loose, store: store.withOnError({ fallback: 'local', share: 0.25 }) });
   */
  withOnError(onError: OnError): Store {
    return { bind: tablesOf(this.context, checkOnError(onError, 'RedisStore.withOnError')) };
  }

  /**
   * checkMemory returns, for the Redis behind this store (each master of a cluster whose slot map
   * the client knows), its `maxmemory`, `maxmemory-policy` and whether a throttled key can be
   * evicted there, which resets its limit: `risk: 'evicts-limit-state'` under every `allkeys-*` and
   * `volatile-*` policy with a bound. Call it once after connecting and log or alert on the
   * reports whose risk is not `unbounded` or `refuses-writes`. It reads INFO through a script (CONFIG
   * is often refused on managed Redis); it never rejects: what it cannot read is `risk: 'unknown'`.
   * No script can tell that a key it expected was evicted (a missing key reads as a fresh one),
   * so this check, made before traffic, is the guard.
   *
   * @example
   * for (const report of await store.checkMemory()) {
   *   if (report.risk === 'evicts-limit-state' || report.risk === 'unknown') log.warn(report.message);
   * }
   */
  checkMemory(): Promise<RedisMemoryReport[]> {
    return checkRedisMemory(this.context.runner, routingKeys(this.adapter, this.context.prefix));
  }

  /**
   * consumeAll decides several requests together, each on its own policy and key (say 10 per
   * second and 100 per minute for one user), and charges them only when every one is admitted.
   *
   * When all keys share a hash slot (always on a single Redis; on a cluster when the keys share a
   * hash tag, as one user key under several policies does) it is one script and one round trip:
   * all or nothing, atomically. With batching on (`maxBatchSize` > 1, the default) that script is
   * the tick's batch script, shared with the other decisions and `consumeAll` calls of the same tick.
   *
   * On a cluster with keys in different slots no single script can see them all, so it is done in
   * two steps, with this bound: (1) every limit is peeked (batched per slot, in parallel);
   * a request any limit refuses is refused there, having charged nothing anywhere, so a request
   * refused by one limit (an exhausted user) never takes room from another (its IP) that others
   * share. (2) A request every limit admitted is charged, one script per slot, in parallel. Only
   * when another request took the room of some limit between (1) and (2), or a slot failed, does
   * a slot refuse after others charged: those are refunded at once, so such a charge is visible to
   * other requests for at most the slowest slot's round trip of (2) plus that of the refund (each
   * bounded by `timeoutMs`), and only to the extent of the requests racing that way; a slot that
   * failed makes the call reject with its error once the others are refunded. No limit ever admits more than it allows; a window
   * boundary passing between charge and refund may make a windowed policy's refund return slightly
   * more or less than was charged; a refund that fails leaves the charge until it refills (the
   * call then rejects with `STORE_ERROR` saying so). An admitted request costs two round trips.
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
      if (!Number.isFinite(testMs))
        return Promise.reject(
          new FloodgateError(
            'INVALID_OPTION',
            `nowMs must be a finite number in unsafeTestTime mode, got ${describeValue(testMs)}`,
            'nowMs',
          ),
        );
      time = String(testMs);
    }
    return consumeAll(requests, time === '' ? this.liveContext : { ...this.liveContext, time });
  }
}

/** tablesOf returns a `bind` that makes one table per algorithm under `onError`, on first use. */
function tablesOf(context: TableContext, onError: OnError): (algorithm: Algorithm) => RedisTable {
  const tables = new Map<Algorithm, RedisTable>();
  return (algorithm) => {
    let table = tables.get(algorithm);
    if (table === undefined) {
      table = new RedisTable(algorithm, context, onError);
      tables.set(algorithm, table);
    }
    return table;
  };
}

function contextOf(
  o: RedisStoreOptions,
  adapter: RedisAdapter,
  time: { testTime: boolean; clock: Clock },
): TableContext {
  const { testTime, clock } = time;
  const timeout = StoreTimeout.of(o.timeoutMs, 'RedisStore.timeoutMs');
  const observer = checkObserver(o.observer);
  const circuits = circuitsOf(o, adapter, { clock, timeoutMs: timeout.maxMs, observer });
  const runner = new ScriptRunner(adapter, timeout, circuits, { clock, timers: checkTimers(o.timers), observer });
  const maxBatchSize = positiveInteger(o.maxBatchSize ?? 128, 'RedisStore.maxBatchSize');
  const prefix = checkPrefix(o.prefix ?? 'floodgate:');
  const census = new FleetCensus(runner, { key: `${prefix}census` });
  runner.answers(census.beat);
  return {
    runner,
    batcher: maxBatchSize > 1 ? new Batcher({ runner, cluster: adapter.cluster, maxBatchSize }) : undefined,
    prefix,
    maxKeyLength: positiveInteger(o.maxKeyLength ?? 1024, 'RedisStore.maxKeyLength'),
    testTime,
    overLimitCacheMaxKeys: positiveInteger(o.overLimitCacheMaxKeys ?? 10_000, 'RedisStore.overLimitCacheMaxKeys', 0),
    retryInMs: (redisKey) => circuits.retryInMs(redisKey),
    clock,
    observer,
    nodes: () => census.nodes,
    censusNeeded: () => {
      census.needed = true;
    },
    writeBack: optionalBoolean(o.writeBack, 'RedisStore.writeBack', true),
  };
}

/**
 * circuitsOf returns the store's circuits: one for a single Redis (nothing to pick per call), one
 * per master on a cluster ({@link NodeCircuits}, through the adapter's `nodeOf` when it has one).
 */
function circuitsOf(
  o: RedisStoreOptions,
  adapter: RedisAdapter,
  seams: { clock: Clock; timeoutMs: number; observer: Observer | undefined },
): CircuitRouter {
  const { clock, observer } = seams;
  const changed =
    observer?.circuit === undefined
      ? undefined
      : (circuit: Circuit, state: CircuitState): void =>
          notify(observer, 'circuit', { store: 'redis', node: circuit.node, state, atMs: clock.now() });
  const options = {
    failuresToOpen: positiveInteger(o.failuresToOpen ?? 3, 'RedisStore.failuresToOpen'),
    probeIntervalMs: positiveNumber(o.probeIntervalMs ?? 250, 'RedisStore.probeIntervalMs'),
    probeTimeoutMs: seams.timeoutMs,
    clock,
    ...(changed === undefined ? {} : { changed }),
  };
  if (!adapter.cluster) return new Circuit(options);
  if (adapter.nodeOf === undefined) return new NodeCircuits(options);
  return new NodeCircuits({ ...options, nodeOf: (slot) => adapter.nodeOf?.(slot) });
}

function checkAdapter(adapter: unknown): RedisAdapter {
  const a = adapter as Partial<RedisAdapter> | null | undefined;
  const badNodeOf = typeof a === 'object' && a !== null && a.nodeOf !== undefined && typeof a.nodeOf !== 'function';
  if (
    typeof a !== 'object' ||
    a === null ||
    typeof a.evalsha !== 'function' ||
    typeof a.eval !== 'function' ||
    typeof a.cluster !== 'boolean' ||
    badNodeOf
  ) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.adapter must be a RedisAdapter ({ cluster, evalsha, eval } and, when given, a nodeOf function), e.g. ioredisAdapter(new Redis()) or nodeRedisAdapter(client), got ${describeValue(adapter)}`,
      'RedisStore.adapter',
    );
  }
  return a as RedisAdapter;
}

function checkClock(clock: unknown): Clock | undefined {
  if (clock === undefined) return undefined;
  if (typeof clock !== 'object' || clock === null || typeof (clock as Partial<Clock>).now !== 'function') {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.clock must have a now() method returning ms, like systemClock or a ManualClock, got ${describeValue(clock)}`,
      'RedisStore.clock',
    );
  }
  return clock as Clock;
}

function checkTimers(timers: unknown): Timers {
  if (timers === undefined) return systemTimers;
  if (!isTimers(timers))
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.timers must have setTimer and clearTimer, like systemTimers or a ManualClock, got ${describeValue(timers)}`,
      'RedisStore.timers',
    );
  return timers;
}

function checkObserver(observer: unknown): Observer | undefined {
  if (observer === undefined) return undefined;
  if (typeof observer !== 'object' || observer === null) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.observer must be an object of optional hooks (storeCall, storeError, circuit, fallback), got ${describeValue(observer)}`,
      'RedisStore.observer',
    );
  }
  return observer as Observer;
}

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new FloodgateError(
      'INVALID_OPTION',
      `RedisStore.prefix must be a string without { or } (the key is the hash tag), got ${describeValue(prefix)}`,
      'RedisStore.prefix',
    );
  }
  return prefix;
}

function optionalBoolean(value: unknown, option: string, byDefault = false): boolean {
  if (value === undefined) return byDefault;
  if (typeof value !== 'boolean')
    throw new FloodgateError('INVALID_OPTION', `${option} must be true or false, got ${describeValue(value)}`, option);
  return value;
}
