import { leaseOverAdmission, leaseSettingsOf, leaseTermsOf, type Algorithm } from 'floodgate';
import type { Arrivals } from './arrivals.js';
import type { LaneRun } from './engine/lane-run.js';
import { promiseOf } from './policy.js';
import type { LaneSpec, PolicySpec } from './scenario.js';

/** NodeFigures are one node's part of a leased fleet's run. */
export interface NodeFigures {
  /** Requests handed to it. */
  readonly requests: number;
  /** Requests it admitted. */
  readonly admitted: number;
  /** Its calls that reached the store: asks, returns and per-request decisions. */
  readonly storeOps: number;
  /** When it died, in ms (undefined: it lived). */
  readonly diedAtMs: number | undefined;
  /** Requests it had in hand when it died, never answered. */
  readonly lost: number;
}

/** FleetFigures are what a fleet cost the store and how far it went above the policy's exact answer. */
export interface FleetFigures {
  readonly admitted: number;
  readonly storeOps: number;
  /** Store operations per admitted request (per-request decisions: at least 1, refusals cost one too). */
  readonly storeOpsPerAdmitted: number;
  /** The most admitted cost on one key above the policy's exact answer, in units ({@link overExactAnswer}). */
  readonly overAdmitted: number;
  /** `overAdmitted` as a percentage of the policy's limit. */
  readonly overPercent: number;
}

/** LeaseReport is a leased lane's figures: the settings, the stated bound, each node, the store's work, and the per-request peer's. */
export interface LeaseReport extends FleetFigures {
  readonly leaseMs: number;
  readonly maxOutstandingShare: number;
  /** Units of a key that may be out on leases at once across the fleet: `max(1, floor(share × limit))`. */
  readonly maxOutstanding: number;
  /** The library's stated worst case above the policy's exact answer (`leaseOverAdmission`): `maxOutstanding`, 0 for a fixed window. */
  readonly boundUnits: number;
  readonly nodes: readonly NodeFigures[];
  /** Units each node held of the chart key on the store's ledger at the end of each chart step (a dead node's until its record ends). */
  readonly heldAtStepEnd: readonly Float64Array[];
  /** The same fleet (round trips, weights, deaths) deciding every request on the store. */
  readonly perRequest: FleetFigures;
}

/**
 * leaseReportOf returns the {@link LeaseReport} of a leased lane's run (undefined for a lane that
 * does not lease): `algorithm` is the lane's policy as the library built it.
 */
export function leaseReportOf(
  lane: LaneSpec,
  algorithm: Algorithm,
  arrivals: Arrivals,
  run: LaneRun,
): LeaseReport | undefined {
  const d = lane.distribution;
  if (d?.lease === undefined || run.fleet === undefined || run.perRequest === undefined) return undefined;
  const terms = leaseTermsOf(algorithm, leaseSettingsOf(d.lease, 'lease'));
  const shiftMs = d.roundTripMs / 2;
  const nodeOf = run.nodeOf ?? Int32Array.from({ length: arrivals.length }, (_, i) => i % d.nodes);
  const requests = new Array<number>(d.nodes).fill(0);
  const admitted = new Array<number>(d.nodes).fill(0);
  for (let i = 0; i < arrivals.length; i++) {
    requests[nodeOf[i]!]!++;
    if (!Number.isNaN(run.admittedAtMs[i]!)) admitted[nodeOf[i]!]!++;
  }
  const fleet = run.fleet;
  return {
    leaseMs: d.lease.leaseMs,
    maxOutstandingShare: d.lease.maxOutstandingShare,
    maxOutstanding: terms.maxOutstanding,
    boundUnits: leaseOverAdmission(algorithm, d.lease),
    ...figuresOf(arrivals, run, lane.policy, shiftMs),
    nodes: requests.map((n, node) => ({
      requests: n,
      admitted: admitted[node]!,
      storeOps: fleet.storeOps[node]!,
      diedAtMs: Number.isNaN(fleet.diedAtMs[node]!) ? undefined : fleet.diedAtMs[node]!,
      lost: fleet.lost[node]!,
    })),
    heldAtStepEnd: fleet.heldAtStepEnd,
    perRequest: figuresOf(arrivals, run.perRequest, lane.policy, shiftMs),
  };
}

function figuresOf(arrivals: Arrivals, run: LaneRun, spec: PolicySpec, shiftMs: number): FleetFigures {
  let admitted = 0;
  for (const at of run.admittedAtMs) if (!Number.isNaN(at)) admitted++;
  const storeOps = (run.fleet?.storeOps ?? []).reduce((a, b) => a + b, 0);
  const overAdmitted = overExactAnswer(arrivals, run.admittedAtMs, spec, shiftMs);
  return {
    admitted,
    storeOps,
    storeOpsPerAdmitted: storeOps / Math.max(1, admitted),
    overAdmitted,
    overPercent: (overAdmitted / promiseOf(spec).limit) * 100,
  };
}

/**
 * overExactAnswer returns the most cost admitted on one key above what `spec` allows exactly
 * (0 when never above), from each arrival's admission time (NaN: refused):
 *
 * - token bucket, leaky bucket, GCRA (burst b, rate r): over every span of time [s, e], the
 *   admitted cost less `b + r × (e - s)`, the most the policy admits in any span (each gap between
 *   admissions 1 µs longer: the library's own tolerance of time, which GCRA's sums of intervals need);
 * - fixed window: in each window, the admitted cost less the limit. The windows are the store's:
 *   an admission is counted `shiftMs` (half the round trip) earlier, when its unit was counted
 *   on the store, as a lease ends `shiftMs` before its window does on the store's clock.
 *
 * Other policies (no lease runs them) return NaN.
 */
export function overExactAnswer(arrivals: Arrivals, admittedAtMs: Float64Array, spec: PolicySpec, shiftMs = 0): number {
  const order = admittedInKeyOrder(arrivals, admittedAtMs);
  if (spec.type === 'fixed-window') return overFixedWindows(arrivals, admittedAtMs, order, spec, shiftMs);
  if (spec.type !== 'token-bucket' && spec.type !== 'leaky-bucket' && spec.type !== 'gcra') return Number.NaN;
  const promise = promiseOf(spec);
  const burst = promise.guaranteed!;
  const perMs = burst / promise.windowMs;
  let best = 0;
  let run = 0;
  for (let j = 0; j < order.length; j++) {
    const i = order[j]!;
    const prev = j > 0 ? order[j - 1]! : -1;
    const cost = arrivals.costs[i]!;
    // The most admitted above the rate over any span ending here: a run that the rate drains.
    const sameKey = prev >= 0 && arrivals.keyIds[prev] === arrivals.keyIds[i];
    const spanMs = admittedAtMs[i]! - admittedAtMs[prev]! + TIME_SLACK_MS;
    run = sameKey ? Math.max(cost, run + cost - perMs * spanMs) : cost;
    best = Math.max(best, run - burst);
  }
  return best;
}

function overFixedWindows(
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  order: Int32Array,
  spec: Extract<PolicySpec, { type: 'fixed-window' }>,
  shiftMs: number,
): number {
  let best = 0;
  let sum = 0;
  let window = Number.NaN;
  let keyId = -1;
  for (const i of order) {
    const w = Math.floor((admittedAtMs[i]! - shiftMs) / spec.windowMs);
    if (w !== window || arrivals.keyIds[i] !== keyId) sum = 0;
    window = w;
    keyId = arrivals.keyIds[i]!;
    sum += arrivals.costs[i]!;
    best = Math.max(best, sum - spec.limit);
  }
  return best;
}

/** The library's tolerance of time (`TIME_EPSILON_MS` in its scripts): admissions this close count as one instant. */
const TIME_SLACK_MS = 1e-3;

/** The admitted requests' indices, by key and then by admission time (ties in arrival order). */
function admittedInKeyOrder(arrivals: Arrivals, admittedAtMs: Float64Array): Int32Array {
  const order: number[] = [];
  for (let i = 0; i < arrivals.length; i++) if (!Number.isNaN(admittedAtMs[i]!)) order.push(i);
  const { keyIds } = arrivals;
  order.sort((a, b) => keyIds[a]! - keyIds[b]! || admittedAtMs[a]! - admittedAtMs[b]! || a - b);
  return Int32Array.from(order);
}
