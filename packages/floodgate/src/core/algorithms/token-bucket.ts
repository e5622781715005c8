import { checkShare, countSlack, type Algorithm } from '../algorithm.js';
import { admitted, ceilMs, makeDecision, type Decision } from '../decision.js';
import { checkCost, positiveNumber, requireObject } from '../validate.js';

/** TokenBucketOptions configures {@link tokenBucket}. */
export interface TokenBucketOptions {
  /** Most tokens the bucket holds, and so the largest burst; a fresh key starts full. */
  capacity: number;
  /** Tokens added per second, continuously (fractions of a token accrue). */
  refillPerSecond: number;
}

/** LeakyBucketOptions configures {@link leakyBucket}. */
export interface LeakyBucketOptions {
  /** Most cost the bucket holds before it overflows; a fresh key starts empty. */
  capacity: number;
  /** Cost drained per second, continuously. */
  leakPerSecond: number;
}

/** TOKEN_BUCKET is the {@link Algorithm.kind} of {@link tokenBucket}'s policies. */
export const TOKEN_BUCKET: unique symbol = Symbol('token-bucket');

/** LEAKY_BUCKET is the {@link Algorithm.kind} of {@link leakyBucket}'s policies (the token bucket's rule, read as a level). */
export const LEAKY_BUCKET: unique symbol = Symbol('leaky-bucket');

/** The two readings of one bucket: the name and the rate parameter each is known by. */
const FORMS = {
  [TOKEN_BUCKET]: { name: 'token-bucket', rateParam: 'refillPerSecond' },
  [LEAKY_BUCKET]: { name: 'leaky-bucket', rateParam: 'leakPerSecond' },
} as const;

// Cells: [0] tokens available, [1] time of the last update in ms.
const TOKENS = 0;
const UPDATED = 1;

/**
 * ContinuousBucket is the one rule behind the token bucket and the leaky bucket meter: a level
 * that refills (or drains) continuously, admitting a cost while it fits. The two differ only in
 * which way the level is read, so their decisions are identical for the same numbers.
 */
class ContinuousBucket implements Algorithm {
  readonly width = 2;
  // The numbers every decision reads are `declare`d: assigned first in the constructor, V8 keeps
  // each as a raw double. A field defined by the class body starts as undefined, and V8 then keeps
  // it as a tagged value that every read must test for a small integer or a boxed double
  // (bench/library-instructions.ts: an admission 489 -> 467 instructions).
  declare readonly limit: number;
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  /** The time an empty bucket takes to fill, in ms: `capacity / rate`. */
  readonly windowMs: number;
  declare private readonly perMs: number;
  declare private readonly msPerToken: number;
  /** Tolerance for comparing counts and costs: {@link countSlack} of the limit. */
  declare private readonly slack: number;

  /** Creates the bucket of `kind`, which says the name and rate parameter it answers to. */
  constructor(
    readonly kind: typeof TOKEN_BUCKET | typeof LEAKY_BUCKET,
    capacity: number,
    private readonly perSecond: number,
  ) {
    const form = FORMS[kind];
    this.name = form.name;
    this.params = { capacity, [form.rateParam]: perSecond };
    this.windowMs = (capacity / perSecond) * 1000;
    this.limit = capacity;
    this.perMs = perSecond / 1000;
    this.msPerToken = 1000 / perSecond;
    this.slack = countSlack(capacity);
  }

  init(cells: Float64Array, at: number, nowMs: number): void {
    cells[at + TOKENS] = this.limit;
    cells[at + UPDATED] = nowMs;
  }

  /**
   * The effective time of a step at `nowMs`: never before the last update. A clock behind it (a
   * node whose clock is behind another's, a wall clock stepped back) works at the last update:
   * no refill until it has caught up, and the update time is never moved back, so no span of time
   * is refilled twice.
   */
  private effectiveMs(cells: Float64Array, at: number, nowMs: number): number {
    const updatedMs = cells[at + UPDATED]!;
    return nowMs > updatedMs ? nowMs : updatedMs;
  }

  /** Tokens as of the effective time `effectiveMs` (at or after the last update). */
  private tokensAt(cells: Float64Array, at: number, effectiveMs: number): number {
    const tokens = cells[at + TOKENS]!;
    const elapsedMs = effectiveMs - cells[at + UPDATED]!;
    if (!(elapsedMs > 0)) return tokens;
    return Math.min(this.limit, tokens + elapsedMs * this.perMs);
  }

  /**
   * The decision for `cost` given `tokens` now, as if charged when admitted. `stalledMs` is how far
   * the clock is behind the last update: no refill comes until it has caught up, so it is added to
   * every wait the decision states.
   */
  private answer(tokens: number, cost: number, stalledMs: number): Decision {
    if (!(tokens + this.slack >= cost)) return this.refusal(tokens, cost, stalledMs);
    const left = Math.max(0, tokens - cost);
    return admitted(this.limit, left, stalledMs + (this.limit - left) * this.msPerToken);
  }

  /** The refusal of {@link answer}: apart, so that the admission inlines whole into a caller's loop. */
  private refusal(tokens: number, cost: number, stalledMs: number): Decision {
    // The first time admitted under the same tolerance as the check in answer.
    const retryAfterMs = stalledMs + (cost - tokens - this.slack) * this.msPerToken;
    return makeDecision(false, this.limit, tokens, retryAfterMs, stalledMs + (this.limit - tokens) * this.msPerToken);
  }

  /**
   * consume is {@link answer} and the charge in one: the admission is written out here rather than
   * read back from the decision, so that the whole step stays small enough for V8 to inline into a
   * caller's loop beside the limiter and the store (its budget is counted in bytecode), and the
   * decision object can then be left unbuilt when the caller reads only a field of it.
   */
  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const effectiveMs = this.effectiveMs(cells, at, nowMs);
    const tokens = this.tokensAt(cells, at, effectiveMs);
    if (!(tokens + this.slack >= cost)) return this.refusal(tokens, cost, effectiveMs - nowMs);
    const left = Math.max(0, tokens - cost);
    cells[at + TOKENS] = left;
    cells[at + UPDATED] = effectiveMs;
    return admitted(this.limit, left, effectiveMs - nowMs + (this.limit - left) * this.msPerToken);
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const effectiveMs = this.effectiveMs(cells, at, nowMs);
    return this.answer(this.tokensAt(cells, at, effectiveMs), cost, effectiveMs - nowMs);
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const effectiveMs = this.effectiveMs(cells, at, nowMs);
    cells[at + TOKENS] = Math.min(this.limit, this.tokensAt(cells, at, effectiveMs) + cost);
    cells[at + UPDATED] = effectiveMs;
  }

  reserve(cells: Float64Array, at: number, nowMs: number, cost: number, maxWaitMs: number): number {
    const effectiveMs = this.effectiveMs(cells, at, nowMs);
    const tokens = this.tokensAt(cells, at, effectiveMs);
    // The same wait a refusal's retryAfterMs gives (stall included), in whole ms.
    const waitMs =
      tokens + this.slack >= cost ? 0 : ceilMs(effectiveMs - nowMs + (cost - tokens - this.slack) * this.msPerToken);
    if (waitMs > maxWaitMs) return -1;
    // Book what consuming at the due time would: the bucket cannot fill past capacity while the
    // caller waits (the refill runs from the effective time to the due time). Tokens may go
    // negative: the debt is repaid by the refill before the due time.
    const refillMs = Math.max(0, nowMs + waitMs - effectiveMs);
    cells[at + TOKENS] = Math.min(tokens, this.limit - refillMs * this.perMs) - cost;
    cells[at + UPDATED] = effectiveMs;
    return waitMs;
  }

  restAtMs(cells: Float64Array, at: number): number {
    return cells[at + UPDATED]! + (this.limit - cells[at + TOKENS]!) / this.perMs;
  }

  scaled(share: number): Algorithm {
    checkShare(share, 'share');
    return new ContinuousBucket(this.kind, this.limit * share, this.perSecond * share);
  }

  checkCost(cost: number): void {
    checkCost(cost, this.limit, this.name);
  }
}

/**
 * tokenBucket returns the token bucket {@link Algorithm}: a key starts with `capacity` tokens,
 * gains `refillPerSecond` continuously up to `capacity`, and a request of cost c is admitted when
 * c tokens are there (and takes them). It allows bursts of up to `capacity`, then `refillPerSecond`.
 *
 * Time faults: every step works at `max(nowMs, the last update)` and never records an earlier
 * time, so a clock behind the last update (a node whose clock is behind another's on a shared
 * store, a wall clock stepped back) adds no tokens until it has caught up, and its waits include
 * the time until then. Here floodgate deliberately differs from golang.org/x/time/rate, whose
 * admitted request moves the last update back and refills the same span again (one extra token
 * per step back of one token's time). A clock stepping back in one process so admits nothing
 * extra. Nodes whose clocks are up to `skewSpreadMs` apart (the fastest minus the slowest) admit
 * at most `refillPerSecond * skewSpreadMs / 1000` more in any span than one clock would
 * (`capacity * skewSpreadMs / windowMs`), once per span, not per window: the fastest clock sees the
 * refill that much early. See docs/time.md.
 *
 * @throws FloodgateError `INVALID_OPTION` when capacity or refillPerSecond is not a finite number above 0.
 * @example
 * const limiter = new Limiter({ policy: tokenBucket({ capacity: 10, refillPerSecond: 5 }) });
 */
export function tokenBucket(options: TokenBucketOptions): Algorithm {
  const o = requireObject<TokenBucketOptions>(options, 'tokenBucket');
  const capacity = positiveNumber(o.capacity, 'tokenBucket.capacity');
  const refillPerSecond = positiveNumber(o.refillPerSecond, 'tokenBucket.refillPerSecond');
  return new ContinuousBucket(TOKEN_BUCKET, capacity, refillPerSecond);
}

/**
 * leakyBucket returns the leaky bucket as a meter: each admitted request pours its cost into a
 * bucket that drains at `leakPerSecond`, and a request that would overflow `capacity` is refused.
 * Its decisions equal {@link tokenBucket}'s with the same numbers (tokens = capacity - level).
 * For the leaky bucket as a queue that delays requests to a constant outflow, see the shaping queue.
 * Its time-fault rule and bound are the token bucket's: nodes with clocks up to `skewSpreadMs`
 * apart admit at most `leakPerSecond * skewSpreadMs / 1000` more in any span.
 *
 * @throws FloodgateError `INVALID_OPTION` when capacity or leakPerSecond is not a finite number above 0.
 * @example
 * const limiter = new Limiter({ policy: leakyBucket({ capacity: 20, leakPerSecond: 2 }) });
 */
export function leakyBucket(options: LeakyBucketOptions): Algorithm {
  const o = requireObject<LeakyBucketOptions>(options, 'leakyBucket');
  const capacity = positiveNumber(o.capacity, 'leakyBucket.capacity');
  const leakPerSecond = positiveNumber(o.leakPerSecond, 'leakyBucket.leakPerSecond');
  return new ContinuousBucket(LEAKY_BUCKET, capacity, leakPerSecond);
}
