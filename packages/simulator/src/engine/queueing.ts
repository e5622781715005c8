import { LeakyGate, SmoothRateLimiter } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import type { DistributionSpec, PolicySpec } from '../scenario.js';
import type { LaneRun, QueueContext } from './lane-run.js';
import { laneRun } from './refuse.js';
import { runSharedSmooth } from './shared-smooth.js';
import { createSmooth, type SmoothSpec } from './smooth-limiter.js';

type ShapeSpec = Extract<PolicySpec, { type: 'shaping-queue' }>;

/**
 * runShape returns, for each arrival, the time its turn came in a `LeakyGate` (the leaky bucket
 * as a queue: one turn every `intervalMs` per key, at most `capacity` waiting), or NaN when the
 * gate refused it because the queue was full, with the requests waiting in its queue right after.
 * Each request takes one turn, whatever its cost. With a distribution, each of `nodes` nodes
 * (request i on node `i % nodes`) keeps its own gates holding `share` of the rate, as a gate lives
 * in one process: the interval is `intervalMs / share`.
 */
export function runShape(spec: ShapeSpec, arrivals: Arrivals, context: QueueContext): LaneRun {
  const { nodes, share } = fleetShape(context.distribution);
  const intervalMs = spec.intervalMs / share;
  const gates = new Array<LeakyGate | undefined>(arrivals.keys.length * nodes);
  const watchedId = arrivals.keys.indexOf(context.watch.key);
  const waitingAt = (at: number): number => {
    let waiting = 0;
    for (let n = 0; n < nodes; n++) waiting += gates[watchedId * nodes + n]?.waitingAt(at) ?? 0;
    return waiting;
  };
  const admittedAtMs = new Float64Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++) {
    const t = arrivals.atMs[i]!;
    if (t >= context.watch.probe.nextMs) context.watch.probe.until(t, waitingAt);
    const slot = arrivals.keyIds[i]! * nodes + (i % nodes);
    const gate = (gates[slot] ??= new LeakyGate({ intervalMs, capacity: spec.capacity }));
    const ticket = gate.admit(t);
    admittedAtMs[i] = ticket.rejected ? NaN : t + ticket.waitMs;
    context.watch.recorder.note(i, t, gate.waitingAt(t));
  }
  context.watch.probe.until(Infinity, waitingAt);
  return laneRun(admittedAtMs, nodes, context.watch);
}

/**
 * runSmooth returns, for each arrival, the time a `SmoothRateLimiter` (Guava's, one per key) lets
 * it start, or NaN when that wait would exceed `maxWaitMs` (Infinity: it always waits), with the
 * throttling interval it imposed: for a request it held back, the time since the start before
 * (Guava's interval, long while cold and short once warm; NaN for a request not held back). Costs are taken as whole permits, rounded
 * up (a cost of 0 passes at once without reserving). With a distribution, each node keeps its own
 * limiters at `share` of the rate, as Guava's limiter lives in one process; or, when the
 * distribution is `shared`, every node reserves on one limiter per key on the store
 * ({@link runSharedSmooth}).
 */
export function runSmooth(spec: SmoothSpec, arrivals: Arrivals, context: QueueContext): LaneRun {
  const distribution = context.distribution;
  if (distribution?.shared === true) return runSharedSmooth(spec, arrivals, { ...context, distribution });
  const { nodes, share } = fleetShape(context.distribution);
  const limiters = new Array<SmoothRateLimiter | undefined>(arrivals.keys.length * nodes);
  const lastStartMs = new Float64Array(limiters.length).fill(NaN);
  const admittedAtMs = new Float64Array(arrivals.length);
  const recorder = context.watch.recorder;
  const timeoutMicros = context.maxWaitMs * 1000;
  for (let i = 0; i < arrivals.length; i++) {
    const t = arrivals.atMs[i]!;
    const permits = Math.ceil(arrivals.costs[i]!);
    if (permits === 0) {
      admittedAtMs[i] = t;
      continue;
    }
    const nowMicros = Math.round(t * 1000);
    const slot = arrivals.keyIds[i]! * nodes + (i % nodes);
    const limiter = (limiters[slot] ??= createSmooth(spec, share, nowMicros));
    const waitMicros = Number.isFinite(timeoutMicros)
      ? limiter.tryReserveAt(permits, timeoutMicros, nowMicros)
      : limiter.reserveAt(permits, nowMicros);
    if (waitMicros === false) {
      admittedAtMs[i] = NaN;
      continue;
    }
    const startMs = t + waitMicros / 1000;
    admittedAtMs[i] = startMs;
    // A start the limiter held back comes one throttling interval after the one before it.
    if (waitMicros > 0) recorder.note(i, startMs, startMs - lastStartMs[slot]!);
    lastStartMs[slot] = startMs;
  }
  // Guava's limiter shows no state to peek at: the chart draws the intervals it imposed.
  return laneRun(admittedAtMs, nodes, context.watch);
}

/** The nodes of a lane whose policy lives in each process, and each node's share of the rate. */
function fleetShape(distribution: DistributionSpec | undefined): { nodes: number; share: number } {
  return distribution === undefined ? { nodes: 1, share: 1 } : { nodes: distribution.nodes, share: distribution.share };
}
