/**
 * The lease benchmark's deterministic half: the same fleets and load as bench/leases.ts, on a
 * manual clock, each node a LeasedTable over a MemoryLeaseSource (the shared state in this
 * process, run by the same ledger as the Redis script) with a 1 ms one-way delay. Calls to the
 * shared state stand for Redis scripts, one each; admissions are timed exactly, so over-admission
 * here is the algorithm's, not the machine's. Per-request peers send every request to the shared
 * state's own table (one call each, no batching).
 */
import { tokenBucket, type Decision } from 'floodgate';
import { drive, makeFleet } from '../packages/floodgate/test/leases/fleet.js';

/** VirtualRun is one fleet setting on the manual clock. */
export interface VirtualRun {
  readonly nodes: number;
  /** Undefined: per-request decisions. */
  readonly share: number | undefined;
  readonly skewed: boolean;
}

/** VirtualResult is a run's figures. */
export interface VirtualResult extends VirtualRun {
  readonly admitted: number;
  readonly callsPerAdmitted: number;
  readonly overPercent: number;
  readonly fairness: readonly number[];
}

const RATE = 10_000;
const policy = tokenBucket({ capacity: RATE, refillPerSecond: RATE });

/** runVirtual runs one setting for `seconds` of the manual clock at `overload` x the rate, the bucket drained first. */
export async function runVirtual(run: VirtualRun, seconds: number, overload: number): Promise<VirtualResult> {
  const fleet = makeFleet(policy, run.nodes, { maxOutstandingShare: run.share ?? 0.02 });
  const state = fleet.source.stateOf('shared');
  policy.consume(state.cells, 0, fleet.clock.now(), RATE);
  const demand =
    run.skewed && run.nodes > 1
      ? [0.8, ...(Array(run.nodes - 1).fill(0.2 / (run.nodes - 1)) as number[])]
      : (Array(run.nodes).fill(1 / run.nodes) as number[]);
  const perMs = demand.map((d) => (d * RATE * overload) / 1000);
  const startMs = fleet.clock.now();
  let out: { node: number; sentAtMs: number; atMs: number; decision: Decision }[];
  let calls: number;
  if (run.share === undefined) {
    const direct = fleet.source.direct();
    out = [];
    const owed = perMs.map(() => 0);
    for (let t = 0; t < seconds * 1000; t++) {
      for (let i = 0; i < perMs.length; i++) {
        owed[i]! += perMs[i]!;
        while (owed[i]! >= 1) {
          owed[i]! -= 1;
          const node = i;
          const sentAtMs = fleet.clock.now();
          void Promise.resolve(direct.consume('shared', 1, Number.NaN)).then((decision) =>
            out.push({ node, sentAtMs, atMs: fleet.clock.now(), decision }),
          );
        }
      }
      await new Promise((r) => setImmediate(r));
      fleet.clock.advance(1);
      await new Promise((r) => setImmediate(r));
    }
    calls = fleet.source.calls;
  } else {
    out = await drive(fleet, 'shared', perMs, seconds * 1000);
    calls = fleet.links.reduce((s, l) => s + l.calls, 0) + fleet.tables.reduce((s, t) => s + t.counts.direct, 0);
  }
  const admitted = out.filter((a) => a.decision.allowed);
  const times = admitted.map((a) => a.atMs).sort((a, b) => a - b);
  const fromMs = startMs + 1000;
  const toMs = startMs + seconds * 1000;
  const inside = times.filter((t) => t >= fromMs && t <= toMs);
  let best = 0;
  let first = 0;
  for (let last = 0; last < inside.length; last++) {
    while (inside[last]! - inside[first]! >= 1000) first++;
    best = Math.max(best, last - first + 1);
  }
  const counted = admitted.filter((a) => a.sentAtMs >= fromMs && a.atMs <= toMs);
  const byNode = demand.map((_, i) => counted.filter((a) => a.node === i).length);
  return {
    ...run,
    admitted: admitted.length,
    callsPerAdmitted: calls / Math.max(1, admitted.length),
    overPercent: (Math.max(0, best - RATE) / RATE) * 100,
    fairness: byNode.map((n, i) => n / Math.max(1, counted.length) / demand[i]!),
  };
}
