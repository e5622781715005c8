/** consumeAcross: a decision over several limits held in different stores (see `consumeAll`). */
import type { Decision } from './core/decision.js';
import type { Limiter } from './limiter.js';
import { MemoryTable } from './stores/memory-store.js';
import type { MaybePromise, SyncPolicyStore } from './stores/store.js';
import { UndoLog } from './stores/undo-log.js';

/**
 * LimitsDecision is the answer over several limits: `allowed` when every limit admitted the
 * request (and each was charged), else nothing was charged anywhere. `decisions[i]` is entry i's
 * decision, in order. In a refusal, entries that refused say so (read `retryAfterMs` from them);
 * entries that would have admitted carry that trial decision (`allowed: true`, `remaining` as if
 * charged) though nothing was charged.
 */
export interface LimitsDecision {
  readonly allowed: boolean;
  readonly decisions: readonly Decision[];
}

/** Item is one checked entry of `consumeAll`. */
export interface Item {
  readonly limiter: Limiter;
  readonly key: string;
  readonly cost: number;
  /** Its synchronous table, or undefined for an asynchronous store. */
  readonly sync: SyncPolicyStore | undefined;
  /** True when the cost is above the limit: refused whatever the state. */
  readonly never: boolean;
}

/** never returns `state` as a refusal that no wait can cure: the cost is above the policy's limit. */
export function never(state: Decision): Decision {
  return { ...state, allowed: false, retryAfterMs: Infinity, reason: 'limit' };
}

/** reportItems reports each entry's decision to its limiter's observer: a charge (or refusal) as `consume`, a trial as `peek`. */
export function reportItems(items: readonly Item[], decisions: readonly Decision[], allowed: boolean): void {
  for (let i = 0; i < items.length; i++) {
    const { limiter, key, cost } = items[i]!;
    if (!limiter.hasDecisionObserver) continue;
    limiter.report(allowed || !decisions[i]!.allowed ? 'consume' : 'peek', key, cost, decisions[i]!, NaN);
  }
}

/**
 * consumeAcross decides `items` held in different stores: look at every limit without charging,
 * then charge the asynchronous ones in parallel, then the synchronous ones in one step; a refusal
 * at any point refunds what was charged. See `consumeAll` for the bound this gives.
 */
export async function consumeAcross(items: readonly Item[]): Promise<LimitsDecision> {
  const decisions = new Array<Decision>(items.length);
  const pending: number[] = [];
  for (let i = 0; i < items.length; i++) {
    if (items[i]!.sync === undefined) pending.push(i);
    else decisions[i] = look(items[i]!) as Decision;
  }
  const lookFirst =
    pending.length > 1 || items.some((item, i) => item.never || (decisions[i] !== undefined && !decisions[i]!.allowed));
  if (lookFirst) {
    await Promise.all(pending.map(async (i) => (decisions[i] = await look(items[i]!))));
    if (decisions.some((d) => !d.allowed)) return finish(items, decisions, false);
  }
  const charged: number[] = [];
  // async: a charge that throws at once is a rejection too, and the others are still awaited.
  const settled = await Promise.allSettled(pending.map(async (i) => charge(items[i]!)));
  let failure: unknown;
  for (const [j, outcome] of settled.entries()) {
    const i = pending[j]!;
    if (outcome.status === 'rejected') failure ??= outcome.reason;
    else if ((decisions[i] = outcome.value).allowed) charged.push(i);
  }
  if (failure !== undefined || charged.length < pending.length) {
    await refund(items, charged);
    if (failure !== undefined) throw failure;
    fillLooks(items, decisions);
    return finish(items, decisions, false);
  }
  if (!chargeSyncItems(items, decisions)) {
    await refund(items, charged);
    return finish(items, decisions, false);
  }
  return finish(items, decisions, true);
}

/**
 * consumeLone decides a lone entry on an asynchronous store: one charge of its table, as
 * {@link consumeAcross} would make it; or, for a cost above its limit, one look refused by
 * {@link never}, charging nothing. It answers without a promise when the table answers at once (a
 * quota lease spending units it holds), and reports the decision as a charge. A table that throws
 * rejects.
 */
export function consumeLone(item: Item): Decision | Promise<Decision> {
  let answer: MaybePromise<Decision>;
  try {
    answer = item.never ? look(item) : charge(item);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  if (answer instanceof Promise) return answer.then((d) => reportLone(item, d));
  return reportLone(item, answer);
}

function reportLone(item: Item, decision: Decision): Decision {
  if (item.limiter.hasDecisionObserver) item.limiter.report('consume', item.key, item.cost, decision, NaN);
  return decision;
}

/**
 * lookAll decides `items` by looking only, charging nothing: the answer after a store call that may
 * or may not have run (a reply that timed out or came back garbled), where charging again could
 * count the request twice.
 */
export async function lookAll(items: readonly Item[]): Promise<LimitsDecision> {
  const decisions = await Promise.all(items.map(look));
  return finish(
    items,
    decisions,
    decisions.every((d) => d.allowed),
  );
}

function finish(items: readonly Item[], decisions: Decision[], allowed: boolean): LimitsDecision {
  reportItems(items, decisions, allowed);
  return { allowed, decisions };
}

/** What entry `item` would answer, charging nothing. */
function look({ limiter, key, cost, never: isNever, sync }: Item): MaybePromise<Decision> {
  const table = sync ?? limiter.activeTable();
  const nowMs = limiter.nowMsForStore();
  if (!isNever) return table.peek(key, cost, nowMs);
  const state = table.peek(key, 0, nowMs);
  return state instanceof Promise ? state.then(never) : never(state);
}

function charge({ limiter, key, cost }: Item): MaybePromise<Decision> {
  return limiter.activeTable().consume(key, cost, limiter.nowMsForStore());
}

/** Entries not yet decided (charging stopped early) get a look, so every limit is reported. */
function fillLooks(items: readonly Item[], decisions: Decision[]): void {
  for (let i = 0; i < items.length; i++) if (decisions[i] === undefined) decisions[i] = look(items[i]!) as Decision;
}

/** Gives back what the entries at `charged` took; a refund that fails leaves the charge to refill (each table's failure policy reports it). */
async function refund(items: readonly Item[], charged: readonly number[]): Promise<void> {
  await Promise.allSettled(
    charged.map(async (i) => {
      const { limiter, key, cost } = items[i]!;
      await limiter.activeTable().refund(key, cost, limiter.nowMsForStore());
    }),
  );
}

const LOG = new UndoLog();

/** Charges every synchronous entry in one step, all or nothing; false (and nothing charged) when one refuses. */
function chargeSyncItems(items: readonly Item[], decisions: Decision[]): boolean {
  let refused = false;
  const done: number[] = [];
  for (let i = 0; i < items.length && !refused; i++) {
    const { sync, key, cost, limiter } = items[i]!;
    if (sync === undefined) continue;
    const nowMs = limiter.nowMsForStore();
    const d = sync instanceof MemoryTable ? sync.consumeSaving(key, cost, nowMs, LOG) : sync.consume(key, cost, nowMs);
    decisions[i] = d;
    if (!d.allowed) refused = true;
    else if (!(sync instanceof MemoryTable)) done.push(i);
  }
  if (!refused) {
    LOG.clear();
    return true;
  }
  LOG.undo();
  for (const i of done.reverse())
    items[i]!.sync!.refund(items[i]!.key, items[i]!.cost, items[i]!.limiter.nowMsForStore());
  return false;
}
