/**
 * limiter's `TokenBucket`: `bucket.tryRemoveTokens(1)`, synchronous. The library has one bucket
 * per object and no keys, so per-key limiting is a `Map<string, TokenBucket>`, as a user would
 * write it; the lookup is part of each call, as for every other subject.
 */

import { TokenBucket } from 'limiter';
import type { Regime, Subject } from '../support/types.js';
import { HOT_KEY } from './settings.js';

/** The largest bucket limiter accepts; filled up front, since a new TokenBucket starts empty. */
const BIG = Number.MAX_SAFE_INTEGER;

function bucketFor(regime: Regime): TokenBucket {
  if (regime === 'admit') {
    const bucket = new TokenBucket({ bucketSize: BIG, tokensPerInterval: BIG, interval: 'second' });
    bucket.content = BIG;
    return bucket;
  }
  // Empty, refilling one token a day: refused for the whole run.
  return new TokenBucket({ bucketSize: 1, tokensPerInterval: 1, interval: 'day' });
}

export const subject: Subject = {
  library: 'limiter',
  note: 'Map<string, TokenBucket>, get(key).tryRemoveTokens(1)',
  hotKey: {
    sync(regime) {
      const buckets = new Map<string, TokenBucket>();
      const bucket = (key: string): TokenBucket => {
        let b = buckets.get(key);
        if (b === undefined) {
          b = bucketFor(regime);
          buckets.set(key, b);
        }
        return b;
      };
      return (n) => {
        let admitted = 0;
        for (let i = 0; i < n; i++) if (bucket(HOT_KEY).tryRemoveTokens(1)) admitted++;
        return admitted;
      };
    },
  },
  manyKeys: {},
};
