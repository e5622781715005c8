/** decideOne: one limit decided as `decideAll` decides a lone entry, without the arrays of several. */
import type { Decision } from './core/decision.js';
import { FloodgateError, describeValue } from './core/errors.js';
import { closedError, isLimiter, type Limiter } from './limiter.js';
import { consumeLone, never, type Item } from './limits-across.js';
import { invalidKey, isKey, type SyncPolicyStore } from './stores/store.js';

/**
 * decideOne returns the decision for a request of `cost` (default 1) on `key` under `limiter`,
 * exactly as `decideAll([{ limiter, key, cost }]).decisions[0]` would: the request is charged
 * when admitted, and a refusal charges nothing (with one limit, nothing else to look at again).
 *
 * - On a synchronous store (the memory store) it answers without a promise, as
 *   `limiter.consumeSync` does, and allocates nothing more than it.
 * - On an asynchronous store it is a promise of one charge of its table (on Redis, batched with the
 *   other decisions of the same tick); the store's failures are answered by the limiter's `onError`
 *   (a `fail-open` or `fail-closed` decision), and an error that lets through rejects. A table that
 *   answers at once (a quota lease spending units it holds) is answered without a promise.
 * - A cost above the policy's limit is refused with `retryAfterMs: Infinity` (no wait can cure it)
 *   and the key's state otherwise, where `consume` throws `COST_EXCEEDS_LIMIT`. Cost 0 looks at the
 *   key's state, charging nothing.
 *
 * It throws on a synchronous store, and rejects on an asynchronous one: `INVALID_OPTION` when
 * `limiter` is not a {@link Limiter} (a rejection, when it has no synchronous table), `INVALID_KEY`,
 * `INVALID_COST`, and `LIMITER_CLOSED` for a closed limiter. Every decision goes to the limiter's observer as a `consume`.
 *
 * @example
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 100, refillPerSecond: 10 }) });
 * const answer = decideOne(limiter, `ip:${ip}`, weight);
 * const decision = answer instanceof Promise ? await answer : answer;
 * if (!decision.allowed) reply(429, { 'retry-after': Math.ceil(decision.retryAfterMs / 1000) });
 */
export function decideOne(limiter: Limiter, key: string, cost?: number): Decision | Promise<Decision> {
  return decideLimit(limiter, key, cost ?? 1, 'decideOne');
}

/**
 * decideLimit is {@link decideOne} at `cost`, naming `where` in its errors: the one home of a lone
 * limit's decision, for `decideOne` and `decideAll` alike.
 */
export function decideLimit(limiter: Limiter, key: string, cost: number, where: string): Decision | Promise<Decision> {
  // The test decideAll makes of its entries, unchecked: anything without a synchronous table is
  // checked on the asynchronous path, so that it rejects.
  if ((limiter as Partial<Limiter> | undefined)?.table?.synchronous !== true)
    return decideLater(limiter, key, cost, where);
  checkLimit(limiter, key, where);
  const table = limiter.syncTableOrUndefined();
  // A synchronous table that is gone: the limiter was closed.
  if (table === undefined) throw closedError();
  const nowMs = limiter.clock.now();
  let decision: Decision;
  try {
    decision = table.consume(key, cost, nowMs);
  } catch (error) {
    decision = refusedOverLimit(error, table, key, nowMs);
  }
  if (limiter.hasDecisionObserver) limiter.report('consume', key, cost, decision, nowMs);
  return decision;
}

/**
 * refusedOverLimit answers `error`, thrown by `table` for a charge of `key` at `nowMs`: a cost above
 * the limit (`COST_EXCEEDS_LIMIT`) is refused by {@link never} with the key's state; any other
 * error is thrown on.
 */
export function refusedOverLimit(error: unknown, table: SyncPolicyStore, key: string, nowMs: number): Decision {
  if (error instanceof FloodgateError && error.code === 'COST_EXCEEDS_LIMIT') return never(table.peek(key, 0, nowMs));
  throw error;
}

/** itemOf returns the checked entry of `cost` on `key` under `limiter`, marked `never` for a cost above the limit. */
export function itemOf(limiter: Limiter, key: string, cost: number): Item {
  let isNever = false;
  try {
    limiter.policy.checkCost(cost);
  } catch (error) {
    if (!(error instanceof FloodgateError && error.code === 'COST_EXCEEDS_LIMIT')) throw error;
    isNever = true;
  }
  return { limiter, key, cost, sync: limiter.syncTableOrUndefined(), never: isNever };
}

/** Throws unless `limiter` is a {@link Limiter} and `key` a key; small, so that it inlines. */
export function checkLimit(limiter: unknown, key: unknown, where: string): void {
  if (!isLimiter(limiter)) throw notLimiter(limiter, where);
  if (!isKey(key)) throw invalidKey(key, where);
}

/** The lone decision on an asynchronous store: {@link decideLimit}'s errors reject, never throw. */
function decideLater(limiter: Limiter, key: string, cost: number, where: string): Decision | Promise<Decision> {
  let item: Item;
  try {
    checkLimit(limiter, key, where);
    item = itemOf(limiter, key, cost);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return consumeLone(item);
}

function notLimiter(limiter: unknown, where: string): FloodgateError {
  return new FloodgateError(
    'INVALID_OPTION',
    `${where}: limiter must be a Limiter, got ${describeValue(limiter)}`,
    'limiter',
  );
}
