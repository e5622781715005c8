import { checkShare, countSlack, type Algorithm } from '../algorithm.js';
import { ceilMs, makeDecision, type Decision } from '../decision.js';
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
  readonly limit: number;
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  /** The time an empty bucket takes to fill, in ms: `capacity / rate`. */
  readonly windowMs: number;
  private readonly perMs: number;
  private readonly msPerToken: number;
  /** Tolerance for comparing counts and costs: {@link countSlack} of the limit. */
  private readonly slack: number;

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

  /** Tokens as of nowMs; a clock behind the last update adds nothing (x/time/rate's rule). */
  private tokensAt(cells: Float64Array, at: number, nowMs: number): number {
    const elapsedMs = nowMs - cells[at + UPDATED]!;
    const tokens = cells[at + TOKENS]!;
    if (!(elapsedMs > 0)) return tokens;
    return Math.min(this.limit, tokens + elapsedMs * this.perMs);
  }

  /**
   * The decision for `cost` given `tokens` now, as if charged when admitted. `stalledMs` is how far
   * the clock is behind the last update: no refill comes until it has caught up.
   */
  private answer(tokens: number, cost: number, stalledMs: number): Decision {
    const allowed = tokens + this.slack >= cost;
    if (allowed) {
      // Admitted, the update time becomes now, so the refill starts at once.
      const left = Math.max(0, tokens - cost);
      return makeDecision(true, this.limit, left, 0, (this.limit - left) * this.msPerToken);
    }
    // The first time admitted under the same tolerance as the check above.
    const retryAfterMs = stalledMs + (cost - tokens - this.slack) * this.msPerToken;
    return makeDecision(false, this.limit, tokens, retryAfterMs, stalledMs + (this.limit - tokens) * this.msPerToken);
  }

  private stalledMs(cells: Float64Array, at: number, nowMs: number): number {
    const behindMs = cells[at + UPDATED]! - nowMs;
    return behindMs > 0 ? behindMs : 0;
  }

  consume(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    const tokens = this.tokensAt(cells, at, nowMs);
    const decision = this.answer(tokens, cost, this.stalledMs(cells, at, nowMs));
    if (decision.allowed) {
      cells[at + TOKENS] = Math.max(0, tokens - cost);
      cells[at + UPDATED] = nowMs;
    }
    return decision;
  }

  peek(cells: Float64Array, at: number, nowMs: number, cost: number): Decision {
    return this.answer(this.tokensAt(cells, at, nowMs), cost, this.stalledMs(cells, at, nowMs));
  }

  refund(cells: Float64Array, at: number, nowMs: number, cost: number): void {
    const tokens = this.tokensAt(cells, at, nowMs);
    cells[at + TOKENS] = Math.min(this.limit, tokens + cost);
    cells[at + UPDATED] = Math.max(nowMs, cells[at + UPDATED]!);
  }

  reserve(cells: Float64Array, at: number, nowMs: number, cost: number, maxWaitMs: number): number {
    const tokens = this.tokensAt(cells, at, nowMs);
    // The same wait a refusal's retryAfterMs gives, in whole ms.
    const waitMs = tokens + this.slack >= cost ? 0 : ceilMs((cost - tokens - this.slack) * this.msPerToken);
    if (waitMs > maxWaitMs) return -1;
    // Book what consuming at the due time would: the bucket cannot fill past capacity while the
    // caller waits. Tokens may go negative: the debt is repaid by the refill before the due time.
    cells[at + TOKENS] = Math.min(tokens, this.limit - waitMs * this.perMs) - cost;
    cells[at + UPDATED] = nowMs;
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
 * A clock that goes back adds no tokens; a request admitted then records the earlier time, as
 * golang.org/x/time/rate does.
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
