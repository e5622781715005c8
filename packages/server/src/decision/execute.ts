/**
 * Deciding a request's limits together: every enforcing limit admits it, or none is charged. A
 * refused request spends nothing anywhere (unlike Envoy's service, whose refused hits still
 * count); a limit in shadow mode is charged only when it admits, and never refuses the request.
 */
import type { Decision, Limiter } from 'floodgate';
import type { ConsumeAllRequest, ConsumeAllResult } from 'floodgate/redis';

/** Charge is one limit of a request: a key under a limiter, with the hits to charge. */
export interface Charge {
  readonly limiter: Limiter;
  readonly key: string;
  /** Hits to charge; 0 asks without charging (the answer is for one more hit). */
  readonly cost: number;
  /** False for a limit in shadow mode: decided and counted, but never refusing the request. */
  readonly enforcing: boolean;
}

/** AllOrNothingStore is a store that decides several limits in one atomic step (`RedisStore.consumeAll`). */
export interface AllOrNothingStore {
  consumeAll(requests: readonly ConsumeAllRequest[]): Promise<ConsumeAllResult>;
}

/** hasConsumeAll returns whether `store` decides several limits at once. */
export function hasConsumeAll(store: unknown): store is AllOrNothingStore {
  return typeof (store as Partial<AllOrNothingStore> | undefined)?.consumeAll === 'function';
}

function askCostOf(c: Charge): number {
  return c.cost === 0 ? 1 : c.cost;
}

function fits(c: Charge): boolean {
  return askCostOf(c) <= c.limiter.policy.limit;
}

/** never marks a decision as refused for good: the cost exceeds what the policy ever admits. */
function never(d: Decision): Decision {
  return { ...d, allowed: false, retryAfterMs: Infinity, reason: 'limit' };
}

/**
 * uncharged returns a decision made with `cost` as if the cost had not been taken: an admitted
 * decision that was only a trial (or a question) reports what is left without it.
 */
function uncharged(d: Decision, cost: number): Decision {
  if (!d.allowed) return d;
  return { ...d, remaining: Math.min(d.limit, Math.floor(d.remaining + cost)) };
}

/**
 * decideSync decides `charges` on synchronous stores (the memory store) at one instant: it asks
 * every limit first, then charges only if every enforcing limit admits. `refused` is true when
 * the request is refused already (a limit of 0): then nothing is charged.
 */
export function decideSync(charges: readonly Charge[], refused: boolean): { allowed: boolean; decisions: Decision[] } {
  const asked = charges.map((c) => (fits(c) ? c.limiter.peekSync(c.key, { cost: askCostOf(c) }) : never(c.limiter.peekSync(c.key, { cost: 0 }))));
  let allowed = !refused && charges.every((c, i) => !c.enforcing || asked[i]!.allowed);
  if (!allowed) return { allowed, decisions: asked.map((d, i) => uncharged(d, askCostOf(charges[i]!))) };
  const decisions: Decision[] = [];
  const taken: Charge[] = [];
  for (const [i, c] of charges.entries()) {
    if (c.cost === 0 || !asked[i]!.allowed) {
      decisions.push(uncharged(asked[i]!, askCostOf(c)));
      continue;
    }
    const d = c.limiter.consumeSync(c.key, { cost: c.cost });
    decisions.push(d);
    if (d.allowed) taken.push(c);
    else if (c.enforcing) allowed = false; // the same key twice in one request, together over its limit
  }
  if (!allowed) for (const c of taken) c.limiter.refundSync(c.key, c.cost);
  return { allowed, decisions };
}

/**
 * decideAsync decides `charges` on an asynchronous store. With `consumeAll` (Redis) the enforcing
 * charges go as one script when they share a slot (one round trip); otherwise each is charged and
 * the admitted ones are refunded when any refuses. Shadow charges are charged on their own, in the
 * same tick, and refunded when the request is refused.
 */
export async function decideAsync(charges: readonly Charge[], refused: boolean, store: unknown): Promise<{ allowed: boolean; decisions: Decision[] }> {
  const blocked = refused || charges.some((c) => c.enforcing && !fits(c));
  if (blocked) {
    const asked = await Promise.all(charges.map((c) => (fits(c) ? c.limiter.peek(c.key, { cost: askCostOf(c) }) : c.limiter.peek(c.key, { cost: 0 }).then(never))));
    return { allowed: false, decisions: asked.map((d, i) => uncharged(d, askCostOf(charges[i]!))) };
  }
  const enforcing = charges.filter((c) => c.enforcing && c.cost > 0);
  const all = hasConsumeAll(store) ? store.consumeAll(enforcing.map((c) => ({ policy: c.limiter.policy, key: c.key, cost: c.cost }))) : consumeEach(enforcing);
  const others = charges.map((c) => {
    if (c.enforcing && c.cost > 0) return undefined;
    if (c.cost === 0 || !fits(c)) return (fits(c) ? c.limiter.peek(c.key, { cost: 1 }) : c.limiter.peek(c.key, { cost: 0 }).then(never)).then((d) => uncharged(d, askCostOf(c)));
    return c.limiter.consume(c.key, { cost: c.cost });
  });
  const [together, ...rest] = await Promise.all([all, ...others]);
  const decisions: Decision[] = [];
  let e = 0;
  for (const [i, c] of charges.entries()) {
    if (c.enforcing && c.cost > 0) {
      const d = together.decisions[e++]!;
      decisions.push(together.allowed ? d : uncharged(d, c.cost));
    } else decisions.push(rest[i]!);
  }
  if (!together.allowed) await refundShadows(charges, decisions);
  return { allowed: together.allowed, decisions };
}

async function refundShadows(charges: readonly Charge[], decisions: Decision[]): Promise<void> {
  const refunds: Array<Promise<void>> = [];
  for (const [i, c] of charges.entries()) {
    if (c.enforcing || c.cost === 0 || !fits(c) || !decisions[i]!.allowed) continue;
    refunds.push(c.limiter.refund(c.key, c.cost));
    decisions[i] = uncharged(decisions[i]!, c.cost);
  }
  await Promise.all(refunds);
}

/** consumeEach charges each request, and gives the admitted ones back when any refuses. */
async function consumeEach(charges: readonly Charge[]): Promise<ConsumeAllResult> {
  const decisions = await Promise.all(charges.map((c) => c.limiter.consume(c.key, { cost: c.cost })));
  const allowed = decisions.every((d) => d.allowed);
  if (!allowed) {
    await Promise.all(charges.map((c, i) => (decisions[i]!.allowed ? c.limiter.refund(c.key, c.cost) : undefined)));
  }
  return { allowed, decisions };
}
