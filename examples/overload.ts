// Overload protection: an adaptive concurrency limit in front of a service with 8 slots of 20 ms
// (400 calls/s), offered 5x that, told nothing about its capacity. Runs on a manual clock, so the
// five simulated seconds take a moment; the same code runs on the real clock without `clock`.
// Run: node --conditions=floodgate-source --import tsx examples/overload.ts
import { ConcurrencyLimiter, ManualClock, type ConcurrencyPermit } from 'floodgate';

const clock = new ManualClock(0);
const limiter = new ConcurrencyLimiter({ adaptive: { minLimit: 2 }, tiers: 2, clock });

// The service: 8 slots, a first-in, first-out queue without bound, 20 ms a call.
const slots = 8;
let busy = 0;
const queue: ConcurrencyPermit[] = [];
const finishing: { atMs: number; permit: ConcurrencyPermit }[] = [];
const start = (): void => {
  while (busy < slots && queue.length > 0) {
    busy++;
    finishing.push({ atMs: clock.now() + 20, permit: queue.shift()! });
  }
};

let answered = 0;
let shed = 0;
let criticalShed = 0;
for (let tick = 0; tick < 5000 * 2; tick++) {
  clock.set(tick / 2); // 2,000 calls/s: one every 0.5 ms
  for (const done of finishing.filter((f) => f.atMs <= clock.now())) {
    finishing.splice(finishing.indexOf(done), 1);
    busy--;
    answered++;
    done.permit.release('success'); // the call's latency teaches the limit
  }
  start();
  const tier = tick % 10 === 0 ? 0 : 1; // one call in ten is critical (tier 0)
  const admission = limiter.tryAcquire(tier);
  if (admission.allowed) {
    queue.push(admission);
    start();
  } else {
    shed++;
    if (tier === 0) criticalShed++;
  }
  if (tick % 2000 === 1999) {
    const { limit, adaptive } = limiter.snapshot();
    console.log(
      `t=${String(clock.now() + 0.5).padStart(4)} ms  limit=${limit}  baseline=${adaptive!.baselineRttMs?.toFixed(1)} ms  answered=${answered}  shed=${shed}`,
    );
  }
}
console.log(
  `goodput ${((answered / 5 / 400) * 100).toFixed(0)}% of capacity; critical calls shed: ${criticalShed} of 1000`,
);
