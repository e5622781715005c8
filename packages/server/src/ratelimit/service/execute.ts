/**
 * Deciding a request's limits together, on the library's multi-limit decision (`consumeAll`):
 * every enforcing limit admits the request, or none is charged. A refused request spends nothing
 * anywhere (unlike Envoy's service, whose refused hits still count); a limit in shadow mode is
 * charged only when it and the request are admitted, and never refuses the request.
 */
import { consumeAll, consumeAllSync, type Decision, type LimitEntry, type Limiter } from 'floodgate';

/** Charge is one limit of a request: a key under a limiter, with the hits to charge. */
export interface Charge {
  readonly limiter: Limiter;
  readonly key: string;
  /** Hits to charge; 0 asks without charging (the answer is for one more hit). */
  readonly cost: number;
  /** What asking without charging (cost 0) asks about: one hit's cost (default 1). */
  readonly askCost?: number;
  /** False for a limit in shadow mode: decided and counted, but never refusing the request. */
  readonly enforcing: boolean;
}

/** Outcome is the request's verdict and one decision per charge, in order. */
export interface Outcome {
  readonly allowed: boolean;
  readonly decisions: readonly Decision[];
}

function askCostOf(c: Charge): number {
  return c.cost === 0 ? (c.askCost ?? 1) : c.cost;
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

function lookSync(c: Charge): Decision {
  return fits(c)
    ? uncharged(c.limiter.peekSync(c.key, { cost: askCostOf(c) }), askCostOf(c))
    : never(c.limiter.peekSync(c.key, { cost: 0 }));
}

async function look(c: Charge): Promise<Decision> {
  return fits(c)
    ? uncharged(await c.limiter.peek(c.key, { cost: askCostOf(c) }), askCostOf(c))
    : never(await c.limiter.peek(c.key, { cost: 0 }));
}

/** chargedAndEnforced is whether the request must be admitted by `c`: enforcing, with hits to charge. */
function chargedAndEnforced(c: Charge): boolean {
  return c.enforcing && c.cost > 0;
}

/** enforcedOf returns the entries the request must be admitted by (see {@link chargedAndEnforced}). */
function enforcedOf(charges: readonly Charge[]): LimitEntry[] {
  return charges.filter(chargedAndEnforced).map((c) => ({ limiter: c.limiter, key: c.key, cost: c.cost }));
}

/** merge puts the enforced decisions (from `together`) and the others back in charge order. */
function merge(
  charges: readonly Charge[],
  together: { allowed: boolean; decisions: readonly Decision[] },
  others: readonly (Decision | undefined)[],
): Decision[] {
  let e = 0;
  return charges.map((c, i) => {
    if (!(c.enforcing && c.cost > 0)) return others[i]!;
    const d = together.decisions[e++]!;
    return together.allowed ? d : uncharged(d, c.cost);
  });
}

/** asksRefuse returns whether an enforcing question (hits 0) says that one more hit would be refused. */
function asksRefuse(charges: readonly Charge[], asks: readonly (Decision | undefined)[]): boolean {
  return charges.some((c, i) => c.enforcing && c.cost === 0 && !asks[i]!.allowed);
}

/**
 * decideSync decides `charges` on synchronous stores (the memory store) in one synchronous step.
 * `refused` is true when the request is refused already (a limit of 0): nothing is charged. A
 * question (hits 0) is answered as of before the request, and an enforcing one that says one more
 * hit would be refused refuses the request: a condition that costs nothing.
 */
export function decideSync(charges: readonly Charge[], refused: boolean): Outcome {
  // The common request, every descriptor enforced and charged: one step over all, nothing else to look at.
  if (!refused && charges.every(chargedAndEnforced)) {
    const together = consumeAllSync(charges);
    const decisions = together.allowed
      ? together.decisions
      : together.decisions.map((d, i) => uncharged(d, charges[i]!.cost));
    return { allowed: together.allowed, decisions };
  }
  const asks = charges.map((c) => (c.cost === 0 ? lookSync(c) : undefined));
  if (refused || asksRefuse(charges, asks))
    return { allowed: false, decisions: charges.map((c, i) => asks[i] ?? lookSync(c)) };
  const together = consumeAllSync(enforcedOf(charges));
  const others = charges.map((c, i) => {
    if (c.enforcing && c.cost > 0) return undefined;
    if (c.cost === 0) return asks[i];
    if (!together.allowed || !fits(c)) return lookSync(c);
    return c.limiter.consumeSync(c.key, { cost: c.cost });
  });
  return { allowed: together.allowed, decisions: merge(charges, together, others) };
}

/**
 * decideAsync decides `charges` on an asynchronous store, as {@link decideSync} does. On a
 * RedisStore the enforcing charges are one script when they share a hash slot (one round trip per
 * request); shadow charges go in the same tick, and are refunded when the request is refused.
 * Questions (hits 0) are asked first, in one round trip of their own.
 */
export async function decideAsync(charges: readonly Charge[], refused: boolean): Promise<Outcome> {
  const asks = charges.some((c) => c.cost === 0)
    ? await Promise.all(charges.map((c) => (c.cost === 0 ? look(c) : undefined)))
    : [];
  if (refused || asksRefuse(charges, asks))
    return { allowed: false, decisions: await Promise.all(charges.map((c, i) => asks[i] ?? look(c))) };
  const all = consumeAll(enforcedOf(charges));
  const others = charges.map((c, i) => {
    if (c.enforcing && c.cost > 0) return undefined;
    if (c.cost === 0) return asks[i];
    if (!fits(c)) return look(c);
    return c.limiter.consume(c.key, { cost: c.cost });
  });
  const [together, ...rest] = await Promise.all([all, ...others]);
  const decisions = merge(charges, together, rest);
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
