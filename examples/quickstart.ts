// Quick start: one policy, many keys, on the in-memory store, driven by a manual clock so the
// run is the same every time. `npm start` runs it.
import { Limiter, ManualClock, tokenBucket, slidingWindowLog } from 'floodgate';

const clock = new ManualClock(Date.UTC(2026, 0, 1));
const limiter = new Limiter({ policy: tokenBucket({ capacity: 3, refillPerSecond: 1 }), clock });

console.log('token bucket, capacity 3, 1 token/s; five requests from alice at once:');
for (let i = 1; i <= 5; i++) {
  const d = limiter.consumeSync('alice');
  console.log(`  #${i} allowed=${d.allowed} remaining=${d.remaining} retryAfterMs=${d.retryAfterMs}`);
}
console.log(`  bob is a different key: allowed=${limiter.consumeSync('bob').allowed}`);
clock.advance(1000);
console.log(`  one second later alice: allowed=${limiter.consumeSync('alice').allowed}`);

const log = new Limiter({ policy: slidingWindowLog({ limit: 2, windowMs: 1000 }), clock });
const decision = await log.consume('carol', { cost: 2 });
console.log(
  `sliding log, 2 per second; carol spends 2 at once: allowed=${decision.allowed}, resetMs=${decision.resetMs}`,
);
const refused = await log.consume('carol');
console.log(`  and is refused next: allowed=${refused.allowed}, retryAfterMs=${refused.retryAfterMs}`);
