/**
 * The hand-written ceiling: the token bucket a user would write in a few lines, a plain
 * `Map<string, { tokens, last }>` refilled by elapsed time (`Date.now()`, the same clock floodgate
 * uses by default), taking one token per request and answering only a boolean.
 *
 * Promise path: the same `take` wrapped in an `async` function, awaited once per call — the
 * obvious way to put a synchronous check behind the Promise interface a store would have.
 */

import { keyFor } from '../support/keys.js';
import type { ManyKeysRun, Regime, Subject } from '../support/types.js';
import {
  HOT_KEY,
  HUGE,
  HUGE_REFILL_PER_SECOND,
  MANY_LIMIT,
  MANY_REFILL_PER_SECOND,
  TINY_REFILL_PER_SECOND,
} from './settings.js';

interface Bucket {
  tokens: number;
  last: number;
}

/** MapTokenBucket is the hand-written baseline. */
export class MapTokenBucket {
  readonly buckets = new Map<string, Bucket>();
  private readonly refillPerMs: number;

  constructor(
    private readonly capacity: number,
    refillPerSecond: number,
  ) {
    this.refillPerMs = refillPerSecond / 1000;
  }

  /** take spends one token of `key` if it has one. */
  take(key: string): boolean {
    const now = Date.now();
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { tokens: this.capacity, last: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.capacity, b.tokens + (now - b.last) * this.refillPerMs);
      b.last = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return true;
    }
    return false;
  }

  /** takeAsync is {@link take} behind a Promise. */
  async takeAsync(key: string): Promise<boolean> {
    return this.take(key);
  }

  /**
   * decide is {@link take} answering what floodgate's decision says (what a caller needs for the
   * RateLimit and Retry-After headers): admitted, the limit, whole tokens left, the ms until one
   * token is back when refused, and the ms until the bucket is full again.
   */
  decide(key: string): MapDecision {
    const allowed = this.take(key);
    const tokens = this.buckets.get(key)!.tokens;
    return {
      allowed,
      limit: this.capacity,
      remaining: Math.floor(tokens),
      retryAfterMs: allowed ? 0 : Math.ceil((1 - tokens) / this.refillPerMs),
      resetMs: Math.ceil((this.capacity - tokens) / this.refillPerMs),
      reason: allowed ? 'ok' : 'limit',
    };
  }

  /** decideAsync is {@link decide} behind a Promise. */
  async decideAsync(key: string): Promise<MapDecision> {
    return this.decide(key);
  }
}

/** MapDecision is the answer of {@link MapTokenBucket.decide}: the fields of floodgate's `Decision`. */
export interface MapDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetMs: number;
  readonly reason: 'ok' | 'limit';
}

function hotBucket(regime: Regime): MapTokenBucket {
  if (regime === 'admit') return new MapTokenBucket(HUGE, HUGE_REFILL_PER_SECOND);
  const bucket = new MapTokenBucket(1, TINY_REFILL_PER_SECOND);
  bucket.take(HOT_KEY);
  return bucket;
}

function manyKeysSync(): ManyKeysRun {
  const bucket = new MapTokenBucket(MANY_LIMIT, MANY_REFILL_PER_SECOND);
  return {
    fill(n) {
      let admitted = 0;
      for (let i = 0; i < n; i++) if (bucket.take(keyFor(i))) admitted++;
      return admitted;
    },
    update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) if (bucket.take(keys[i]!)) admitted++;
      return admitted;
    },
    size: () => bucket.buckets.size,
  };
}

function manyKeysPromise(): ManyKeysRun {
  const bucket = new MapTokenBucket(MANY_LIMIT, MANY_REFILL_PER_SECOND);
  return {
    async fill(n) {
      let admitted = 0;
      for (let i = 0; i < n; i++) if (await bucket.takeAsync(keyFor(i))) admitted++;
      return admitted;
    },
    async update(keys) {
      let admitted = 0;
      for (let i = 0; i < keys.length; i++) if (await bucket.takeAsync(keys[i]!)) admitted++;
      return admitted;
    },
    size: () => bucket.buckets.size,
  };
}

export const subject: Subject = {
  library: 'Map bucket (hand-written)',
  note: 'Map<string,{tokens,last}> token bucket; Promise path = async function per call',
  hotKey: {
    sync(regime) {
      const bucket = hotBucket(regime);
      return (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if (bucket.take(HOT_KEY)) admitted++;
        return admitted;
      };
    },
    promise(regime) {
      const bucket = hotBucket(regime);
      return async (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if (await bucket.takeAsync(HOT_KEY)) admitted++;
        return admitted;
      };
    },
  },
  manyKeys: { sync: manyKeysSync, promise: manyKeysPromise },
};

/**
 * The same bucket answering floodgate's decision fields ({@link MapTokenBucket.decide}): the fair
 * peer of a limiter that answers a decision, where {@link subject} answers a boolean.
 */
export const decisionSubject: Subject = {
  library: 'Map bucket answering a decision',
  note: 'the same Map bucket, answering { allowed, limit, remaining, retryAfterMs, resetMs, reason }',
  hotKey: {
    sync(regime) {
      const bucket = hotBucket(regime);
      return (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if (bucket.decide(HOT_KEY).allowed) admitted++;
        return admitted;
      };
    },
    promise(regime) {
      const bucket = hotBucket(regime);
      return async (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if ((await bucket.decideAsync(HOT_KEY)).allowed) admitted++;
        return admitted;
      };
    },
  },
  manyKeys: {},
};
