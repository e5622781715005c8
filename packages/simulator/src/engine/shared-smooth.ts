import type { SmoothRateLimiter } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import type { DistributionSpec, OutageSpec } from '../scenario.js';
import type { LaneRun, QueueContext } from './lane-run.js';
import { inOutage, roundTripsOf, storeOrder } from './nodes.js';
import { createSmooth, type SmoothSpec } from './smooth-limiter.js';
import { laneRun } from './refuse.js';

/**
 * runSharedSmooth returns, for each arrival, the time its node lets it start under one smooth
 * limiter per key shared by every node on the store (the library's RedisSmoothLimiter: one state
 * on the store, on the store's clock), or NaN when refused. Request i goes to node `i % nodes`
 * and reaches the store after half its round trip (reordered there by the jitter); the store
 * reserves it at that moment, and the node, once the answer is back (the whole round trip), waits
 * the reserved wait: its start is the store's schedule moved by the return half of its round trip,
 * so the jitter shows in the spacing of the fleet's admissions. A wait that cannot fit in
 * `maxWaitMs` after the round trip is refused, reserving nothing (the library releases such a
 * reservation when it is still the latest). While the store is out, a node waits `timeoutMs`
 * and then admits (`fail-open`), refuses (`fail-closed`) or reserves on its own smooth limiter at
 * `share` of the rate (`local`). Costs are whole permits, rounded up; a cost of 0 passes at once.
 */
export function runSharedSmooth(
  spec: SmoothSpec,
  arrivals: Arrivals,
  context: QueueContext & { readonly distribution: DistributionSpec },
): LaneRun {
  const { distribution, watch } = context;
  const nodes = distribution.nodes;
  const roundTripMs = roundTripsOf(arrivals, distribution, context.seed);
  const shared = new Array<SmoothRateLimiter | undefined>(arrivals.keys.length);
  const local = new Array<SmoothRateLimiter | undefined>(arrivals.keys.length * nodes);
  const lastStartMs = new Float64Array(arrivals.keys.length).fill(NaN);
  const admittedAtMs = new Float64Array(arrivals.length);
  const outage = distribution.outage;
  for (const i of storeOrder(arrivals, roundTripMs)) {
    const t = arrivals.atMs[i]!;
    const permits = Math.ceil(arrivals.costs[i]!);
    if (permits === 0) {
      admittedAtMs[i] = t;
      continue;
    }
    const keyId = arrivals.keyIds[i]!;
    const rt = roundTripMs[i]!;
    const reachMs = t + rt / 2;
    let startMs: number;
    if (inOutage(outage, reachMs)) {
      const slot = keyId * nodes + (i % nodes);
      startMs = decideAlone(
        outage!,
        t,
        permits,
        context.maxWaitMs,
        () => (local[slot] ??= createSmooth(spec, outage!.share, micros(t))),
      );
    } else {
      const limiter = (shared[keyId] ??= createSmooth(spec, 1, micros(reachMs)));
      const waitMicros = reserve(limiter, permits, context.maxWaitMs - rt, micros(reachMs));
      startMs = waitMicros === false ? NaN : t + rt + waitMicros / 1000;
      if (waitMicros !== false && waitMicros > 0) watch.recorder.note(i, startMs, startMs - lastStartMs[keyId]!);
    }
    admittedAtMs[i] = startMs;
    if (!Number.isNaN(startMs)) lastStartMs[keyId] = startMs;
  }
  return laneRun(admittedAtMs, nodes, watch);
}

/** A node's own answer while the store is out, after waiting `timeoutMs` for it: its start, or NaN. */
function decideAlone(
  outage: OutageSpec,
  atMs: number,
  permits: number,
  maxWaitMs: number,
  localLimiter: () => SmoothRateLimiter,
): number {
  const decidedAtMs = atMs + outage.timeoutMs;
  if (outage.onError === 'fail-open') return decidedAtMs;
  if (outage.onError === 'fail-closed') return NaN;
  const waitMicros = reserve(localLimiter(), permits, maxWaitMs - outage.timeoutMs, micros(decidedAtMs));
  return waitMicros === false ? NaN : decidedAtMs + waitMicros / 1000;
}

/** Reserves with a wait of at most `timeoutMs` (Infinity: any; below 0: refused), returning the wait in µs or false. */
function reserve(limiter: SmoothRateLimiter, permits: number, timeoutMs: number, nowMicros: number): number | false {
  if (timeoutMs === Infinity) return limiter.reserveAt(permits, nowMicros);
  if (timeoutMs < 0) return false;
  return limiter.tryReserveAt(permits, timeoutMs * 1000, nowMicros);
}

function micros(ms: number): number {
  return Math.round(ms * 1000);
}
