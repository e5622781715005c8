/**
 * Decisions over several limits at once: a request is admitted only if every limit admits it,
 * and a refused request is charged nowhere.
 */
import type { Clock } from './core/clock.js';
import type { Decision } from './core/decision.js';
import { FloodgateError, describeValue } from './core/errors.js';
import { closedError, isLimiter, type ConsumeOptions, type Limiter } from './limiter.js';
import { MemoryTable } from './stores/memory-store.js';
import { invalidKey, isKey, type Store, type SyncPolicyStore } from './stores/store.js';
import { UndoLog } from './stores/undo-log.js';
import {
  consumeAcross,
  consumeLone,
  lookAll,
  never,
  reportItems,
  type Item,
  type LimitsDecision,
} from './limits-across.js';
import { decideLimit, itemOf, refusedOverLimit } from './limits-one.js';

export type { LimitsDecision } from './limits-across.js';

/** LimitEntry is one limit a request is held to: a limiter, the key it is counted under, and its cost (default 1). */
export interface LimitEntry {
  readonly limiter: Limiter;
  readonly key: string;
  readonly cost?: number;
}

/**
 * Step is the state of one synchronous step: what to undo, and the instant it decides at (each
 * clock is read once per step). Steps run to their end before anything else can, so one serves all.
 */
class Step {
  readonly log = new UndoLog();
  /** Charges on tables other than the memory store's, given back by refund. */
  readonly refunds: SyncRefund[] = [];
  private clock: Clock | undefined = undefined;
  private nowMs = 0;

  /** now returns the step's time on `limiter`'s clock. */
  now(limiter: Limiter): number {
    const clock = limiter.clock;
    if (clock !== this.clock) {
      this.clock = clock;
      this.nowMs = clock.now();
    }
    return this.nowMs;
  }

  /** undo puts back everything charged, the latest first. */
  undo(): void {
    this.log.undo();
    const refunds = this.refunds;
    for (let i = refunds.length - 1; i >= 0; i--) {
      const { table, key, cost, nowMs } = refunds[i]!;
      table.refund(key, cost, nowMs);
    }
    this.end();
  }

  /** end closes the step, keeping every charge. */
  end(): void {
    this.log.clear();
    if (this.refunds.length > 0) this.refunds.length = 0;
    this.clock = undefined;
  }
}

const STEP = new Step();

/**
 * consumeAllSync decides a request over several limits on synchronous stores (the memory store)
 * in one synchronous step: each entry is charged in order and, if any refuses, every charge is
 * undone exactly (the keys' state is put back bit for bit) before the step ends, so no other
 * request ever sees a charge that is taken back. Entries after a refusing one are only peeked, so
 * every limit is still reported. An entry whose cost is above its limit is refused with
 * `retryAfterMs: Infinity` (no wait can cure it) instead of throwing.
 *
 * It throws `INVALID_OPTION` for an entry that is not `{ limiter, key, cost? }`, `INVALID_KEY`,
 * `INVALID_COST`, `STORE_NOT_SYNC` when an entry's store answers with promises (use
 * {@link consumeAll}), and `LIMITER_CLOSED` for a closed limiter; nothing stays charged when it
 * throws.
 *
 * @example
 * const perIp = new Limiter({ policy: tokenBucket({ capacity: 100, refillPerSecond: 10 }), name: 'ip' });
 * const perUser = new Limiter({ policy: fixedWindow({ limit: 1000, windowMs: 3_600_000 }), name: 'user' });
 * const { allowed, decisions } = consumeAllSync([{ limiter: perIp, key: ip }, { limiter: perUser, key: userId }]);
 * if (!allowed) reply(429, { 'retry-after': Math.ceil(Math.max(...decisions.filter((d) => !d.allowed).map((d) => d.retryAfterMs)) / 1000) });
 */
export function consumeAllSync(entries: readonly LimitEntry[]): LimitsDecision {
  if (!Array.isArray(entries)) throw notEntries('consumeAllSync');
  const n = entries.length;
  // Sized at once: pushing would allocate room for 16.
  const decisions = new Array<Decision>(n);
  let refusedAt = -1;
  let observed = false;
  try {
    for (let i = 0; i < n; i++) {
      // The last entry's charge is never undone: if it refuses it charged nothing.
      const d = chargeSync(entries[i], i, i < n - 1);
      decisions[i] = d;
      observed ||= entries[i]!.limiter.hasDecisionObserver;
      if (!d.allowed) {
        refusedAt = i;
        break;
      }
    }
  } catch (error) {
    STEP.undo();
    throw error;
  }
  if (refusedAt < 0) {
    STEP.end();
    if (observed) reportAll(entries, decisions, true);
    return { allowed: true, decisions };
  }
  STEP.undo();
  for (let i = refusedAt + 1; i < n; i++) decisions[i] = lookSync(entries[i], i);
  STEP.end();
  reportAll(entries, decisions, false);
  return { allowed: false, decisions };
}

/**
 * consumeAll decides a request over several limits on any stores, resolving to every entry's
 * decision; the request is admitted only if all admit, and a refused request is charged nowhere.
 *
 * - All entries on synchronous stores: {@link consumeAllSync}, one step.
 * - A single entry on an asynchronous store: one charge of its table, as `Limiter.consume` does (on
 *   Redis, batched with the other decisions of the same tick).
 * - Two or more entries on one store that decides several requests itself (`Store.consumeAll`, as
 *   `RedisStore` does: one atomic script per hash slot; across slots of a cluster, see its
 *   documentation): that store's call. Should it fail before running (`STORE_ERROR`), the entries
 *   are decided as below, each by its own table's failure policy; should its reply time out or
 *   come back garbled (`STORE_TIMEOUT`, `STORE_REPLY`), the call may have charged, so each limit is
 *   only looked at (its failure policy answering if the store still fails) and nothing is charged
 *   again.
 * - Otherwise, across stores: first every limit is looked at without charging (synchronous ones
 *   at once, asynchronous ones in parallel; a lone asynchronous entry skips its look), and if any
 *   refuses nothing is charged. Then the asynchronous entries are charged in parallel, and last the
 *   synchronous ones in one step. A charge is taken back only when a limit that admitted the look
 *   refuses the charge, which needs a concurrent request to have taken that limit's last capacity
 *   in between (within one round trip). The bound on what such a race costs others: each entry
 *   already charged holds at most its `cost`, for at most the round trips of the charge and of its
 *   refund (both within the limiters' `timeoutMs`), and is then refunded; synchronous limits are
 *   charged last and so are never charged and taken back.
 *
 * A store's failure is answered by the failure policy of that entry's limiter (or store): a
 * `fail-open` decision admits its entry, a `fail-closed` one refuses the request like any other
 * refusal (nothing charged anywhere); an error that policy lets through (`throw`) rejects, after
 * the charges made so far are refunded. Bad entries reject with the errors {@link consumeAllSync}
 * throws.
 *
 * @example
 * const { allowed, decisions } = await consumeAll([
 *   { limiter: perIp, key: ip },                    // memory store
 *   { limiter: perUser, key: userId, cost: 2 },     // a RedisStore
 * ]);
 */
export function consumeAll(entries: readonly LimitEntry[]): Promise<LimitsDecision> {
  try {
    return Promise.resolve(decideEntries(entries));
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** consumeAll's decision, without a promise where none is needed; it throws for bad entries. */
function decideEntries(entries: readonly LimitEntry[]): LimitsDecision | Promise<LimitsDecision> {
  if (!Array.isArray(entries)) throw notEntries('consumeAll');
  const items = entries.map(checkItem);
  if (items.every((item) => item.sync !== undefined)) return consumeAllSync(entries);
  // A lone entry is one charge of its table (one look, for a cost above its limit): batched with
  // the tick's other decisions (one script per tick on Redis), where the store's all-or-nothing
  // call would be a script of its own; and answered at once when the table answers at once (a
  // quota lease spending units it holds).
  if (items.length === 1) return soleOf(consumeLone(items[0]!));
  const store = items.length > 1 ? sharedStore(items) : undefined;
  if (store !== undefined) return consumeOnStore(store, items);
  return consumeAcross(items);
}

interface SyncRefund {
  readonly table: SyncPolicyStore;
  readonly key: string;
  readonly cost: number;
  readonly nowMs: number;
}

function notEntries(where: string): FloodgateError {
  return new FloodgateError('INVALID_OPTION', `${where} takes an array of { limiter, key, cost? }`, 'entries');
}

/** Throws unless `entry` is `{ limiter, key, cost? }` with a Limiter and a key; small, so that it inlines. */
function checkEntry(entry: LimitEntry | undefined, i: number, where: string): void {
  if (typeof entry !== 'object' || entry === null || !isLimiter(entry.limiter)) throw badEntry(entry, i, where);
  if (!isKey(entry.key)) throw invalidKey(entry.key, `${where}: entry ${i}`);
}

function badEntry(entry: unknown, i: number, where: string): FloodgateError {
  return new FloodgateError(
    'INVALID_OPTION',
    `${where}: entry ${i} must be { limiter, key, cost? } with a Limiter, got ${describeValue(entry)}`,
    `entries[${i}]`,
  );
}

/** Charges entry `i` within the synchronous step, saving what an undo needs. */
function chargeSync(entry: LimitEntry | undefined, i: number, undoable: boolean): Decision {
  checkEntry(entry, i, 'consumeAllSync');
  const { limiter, key } = entry!;
  const cost = entry!.cost ?? 1;
  const table = syncTableOf(limiter, i);
  const nowMs = STEP.now(limiter);
  try {
    if (!undoable) return table.consume(key, cost, nowMs);
    if (table instanceof MemoryTable) return table.consumeSaving(key, cost, nowMs, STEP.log);
    const decision = table.consume(key, cost, nowMs);
    if (decision.allowed && cost > 0) STEP.refunds.push({ table, key, cost, nowMs });
    return decision;
  } catch (error) {
    return refusedOverLimit(error, table, key, nowMs);
  }
}

/** Peeks entry `i` as a look after a refusal: what it would answer, charging nothing. */
function lookSync(entry: LimitEntry | undefined, i: number): Decision {
  checkEntry(entry, i, 'consumeAllSync');
  const { limiter, key } = entry!;
  const table = syncTableOf(limiter, i);
  const nowMs = STEP.now(limiter);
  const cost = entry!.cost ?? 1;
  return cost > limiter.policy.limit ? never(table.peek(key, 0, nowMs)) : table.peek(key, cost, nowMs);
}

function syncTableOf(limiter: Limiter, i: number): SyncPolicyStore {
  const table = limiter.syncTableOrUndefined();
  if (table === undefined) {
    // A synchronous table that is gone: the limiter was closed.
    if (limiter.table.synchronous) throw closedError();
    throw new FloodgateError(
      'STORE_NOT_SYNC',
      `consumeAllSync: entry ${i}'s limiter (${limiter.name}) has an asynchronous store: use consumeAll`,
      `entries[${i}]`,
    );
  }
  return table;
}

/** Reports each entry's decision to its limiter's observer: a charge as `consume`, a trial as `peek`. */
function reportAll(entries: readonly LimitEntry[], decisions: readonly Decision[], allowed: boolean): void {
  for (let i = 0; i < entries.length; i++) {
    const { limiter, key } = entries[i]!;
    if (!limiter.hasDecisionObserver) continue;
    const d = decisions[i]!;
    limiter.report(allowed || !d.allowed ? 'consume' : 'peek', key, entries[i]!.cost ?? 1, d, NaN);
  }
}

function checkItem(entry: LimitEntry | undefined, i: number): Item {
  checkEntry(entry, i, 'consumeAll');
  return itemOf(entry!.limiter, entry!.key, entry!.cost ?? 1);
}

/** The one store every entry shares, when it decides several requests itself and no entry is refused by its cost. */
function sharedStore(items: readonly Item[]): Store | undefined {
  const store = items[0]?.limiter.store;
  if (store === undefined || typeof store.consumeAll !== 'function') return undefined;
  for (const item of items) if (item.limiter.store !== store || item.never) return undefined;
  return store;
}

async function consumeOnStore(store: Store, items: readonly Item[]): Promise<LimitsDecision> {
  const requests = items.map(({ limiter, key, cost }) => ({ policy: limiter.policy, key, cost }));
  const nowMs = items[0]!.limiter.nowMsForStore();
  let result;
  try {
    result = await store.consumeAll!(requests, Number.isNaN(nowMs) ? undefined : nowMs);
  } catch (error) {
    if (error instanceof FloodgateError && /^(INVALID_|COST_)/.test(error.code)) throw error;
    // A reply that timed out or came back garbled may come from a script that ran and charged:
    // deciding again by charging could count the request twice, so each limit is only looked at.
    if (error instanceof FloodgateError && (error.code === 'STORE_TIMEOUT' || error.code === 'STORE_REPLY'))
      return lookAll(items);
    return consumeAcross(items);
  }
  const decisions = [...result.decisions];
  reportItems(items, decisions, result.allowed);
  return { allowed: result.allowed, decisions };
}

const LOOK: ConsumeOptions = Object.freeze({ cost: 0 });

/**
 * decideAll is the multi-limit decision for a caller that answers with every limit's state (the
 * HTTP gate's and the gateway's `RateLimit` headers): {@link consumeAllSync}, without a promise,
 * when every entry's store is synchronous, else {@link consumeAll}'s decision. A lone entry is
 * `decideOne`'s decision (without a promise on a synchronous store, and for a table that
 * answers at once: a quota lease spending units it holds). In a refusal, each limit that admitted
 * on trial reports what it has standing instead of its trial decision, since the refused request
 * was charged nowhere: it is looked at again at cost 0 (on synchronous stores in the same turn; on
 * asynchronous ones in parallel, keeping the trial decision where the look fails, as the answer is
 * still the refusal). It throws, or rejects, as the call it makes does.
 *
 * @example
 * const result = decideAll([{ limiter: perIp, key: ip }, { limiter: perUser, key: userId }]);
 * const { allowed, decisions } = result instanceof Promise ? await result : result;
 */
export function decideAll(entries: readonly LimitEntry[]): LimitsDecision | Promise<LimitsDecision> {
  const lone = Array.isArray(entries) && entries.length === 1 ? entries[0] : undefined;
  // A lone entry that is no object is left to the general path, whose error describes it.
  if (typeof lone === 'object' && lone !== null)
    return soleOf(decideLimit(lone.limiter, lone.key, lone.cost ?? 1, 'decideAll: entry 0'));
  let sync = Array.isArray(entries);
  for (let i = 0; sync && i < entries.length; i++) sync = entries[i]?.limiter?.table?.synchronous === true;
  if (!sync) {
    let decided: LimitsDecision | Promise<LimitsDecision>;
    try {
      decided = decideEntries(entries);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (decided instanceof Promise)
      return decided.then((result) => (result.allowed ? result : standingOf(entries, result)));
    return decided.allowed ? decided : standingOf(entries, decided);
  }
  const result = consumeAllSync(entries);
  if (result.allowed) return result;
  const decisions = result.decisions.slice();
  for (let i = 0; i < decisions.length; i++)
    if (decisions[i]!.allowed) decisions[i] = entries[i]!.limiter.peekSync(entries[i]!.key, LOOK);
  return { allowed: false, decisions };
}

/** soleOf returns the decision over a lone entry whose decision is `decided`. */
function soleOf(decided: Decision | Promise<Decision>): LimitsDecision | Promise<LimitsDecision> {
  return decided instanceof Promise ? decided.then(sole) : sole(decided);
}

function sole(decision: Decision): LimitsDecision {
  return { allowed: decision.allowed, decisions: [decision] };
}

/**
 * standingOf returns refusal `result` with each limit that admitted on trial looked at again at cost
 * 0 (in parallel), keeping the trial decision where the look fails.
 */
async function standingOf(entries: readonly LimitEntry[], result: LimitsDecision): Promise<LimitsDecision> {
  const decisions = await Promise.all(
    result.decisions.map((d, i) => (d.allowed ? entries[i]!.limiter.peek(entries[i]!.key, LOOK).catch(() => d) : d)),
  );
  return { allowed: false, decisions };
}
