/**
 * One subject of bench/cases/limits.ts alone, for `node --cpu-prof`:
 *   node --conditions=floodgate-source --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/cases/profile-limits.ts deny|two
 */
import { Limiter, MemoryStore, consumeAllSync, tokenBucket, type LimitEntry } from 'floodgate';
import { HOT_KEY, HUGE, HUGE_REFILL_PER_SECOND, TINY_REFILL_PER_SECOND } from '../subjects/settings.js';

const which = process.argv[2] ?? 'deny';
const n = 20_000_000;
const t0 = performance.now();
let admitted = 0;
if (which === 'deny' || which === 'allow') {
  const limiter = new Limiter({
    policy:
      which === 'deny'
        ? tokenBucket({ capacity: 1, refillPerSecond: TINY_REFILL_PER_SECOND })
        : tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }),
  });
  for (let i = 0; i < n; i++) if (limiter.consumeSync(HOT_KEY).allowed) admitted++;
} else {
  const store = new MemoryStore();
  const a = new Limiter({ policy: tokenBucket({ capacity: HUGE, refillPerSecond: HUGE_REFILL_PER_SECOND }), store });
  const b = new Limiter({
    policy: tokenBucket({ capacity: HUGE / 2, refillPerSecond: HUGE_REFILL_PER_SECOND }),
    store,
  });
  const entries: LimitEntry[] = [
    { limiter: a, key: HOT_KEY },
    { limiter: b, key: HOT_KEY },
  ];
  if (which === 'two') for (let i = 0; i < n / 2; i++) admitted += consumeAllSync(entries).allowed ? 2 : 0;
  else
    for (let i = 0; i < n / 2; i++)
      admitted += (a.consumeSync(HOT_KEY).allowed ? 1 : 0) + (b.consumeSync(HOT_KEY).allowed ? 1 : 0);
}
console.log(which, admitted, `${(n / (performance.now() - t0) / 1000).toFixed(2)} M decisions/s`);
