import { generateArrivals, type Arrivals } from './arrivals.js';
import { runDistributed } from './engine/distributed.js';
import { runLeaseLane } from './engine/leased.js';
import type { LaneRun, Watch } from './engine/lane-run.js';
import { runShape, runSmooth } from './engine/queueing.js';
import { runRefuse } from './engine/refuse.js';
import { runWait } from './engine/wait.js';
import { leaseReportOf, type LeaseReport } from './lease-report.js';
import { scoreLane, type Score } from './oracle.js';
import { parseScenario } from './parse-scenario.js';
import {
  buildAlgorithm,
  describePolicy,
  promiseOf,
  scenarioErrorOf,
  type LimiterPolicySpec,
  type PolicyPromise,
} from './policy.js';
import type { DistributionSpec, LaneSpec, Scenario } from './scenario.js';
import { seriesOf, type Series } from './series.js';
import { StateProbe, StateRecorder, stateReadingOf, type StateReading } from './state.js';

/** The most chart steps a run is cut into; admissions later than that many steps count in the last. */
const MAX_STEPS = 10_000;

/** LaneResult is how one lane of a scenario did. */
export interface LaneResult {
  readonly name: string;
  /** One line: the policy, its mode and distribution. */
  readonly description: string;
  readonly promise: PolicyPromise;
  readonly score: Score;
  readonly series: Series;
  /** What the lane's state is and how it is drawn (tokens left, a window's count, ...). */
  readonly reading: StateReading;
  /** Each arrival's admission time in ms, NaN when refused (parallel to the run's arrivals). */
  readonly admittedAtMs: Float64Array;
  /** Each arrival's key state right after its decision, in the reading's unit (NaN: none); kept only with `keepStates`. */
  readonly stateAfter: Float32Array | undefined;
  /** How many gateway nodes decided: request i went to node `i % nodes`, unless `nodeOf` says otherwise. */
  readonly nodes: number;
  /** The node each request went to, when not `i % nodes` (a leased fleet's weights and deaths). */
  readonly nodeOf: Int32Array | undefined;
  /** A leased lane's figures: each node, store operations, over-admission against the stated bound, and the per-request peer's. */
  readonly leases: LeaseReport | undefined;
}

/** SimulateOptions are what {@link simulate} keeps beside the scores and the charts' series. */
export interface SimulateOptions {
  /** Keep every request's state after its decision (`LaneResult.stateAfter`, for an export): 4 bytes a request a lane. Default false. */
  readonly keepStates?: boolean;
}

/** SimulationResult is a whole run: the scenario as checked, its traffic and every lane's result. */
export interface SimulationResult {
  readonly scenario: Scenario;
  readonly arrivals: Arrivals;
  /** Time the charts cover, in ms: the scenario's duration, or later if a queued request was admitted later (at most 10,000 steps). */
  readonly horizonMs: number;
  /** Number of chart steps of `scenario.bucketMs`. */
  readonly steps: number;
  /** Arrivals (cost) per step, the offered load. */
  readonly offered: Float64Array;
  /** The key whose state and rolling window the charts draw: the one offered the most cost. */
  readonly chartKey: string;
  readonly lanes: readonly LaneResult[];
}

/**
 * simulate runs the scenario's traffic through each of its lanes on virtual time, with the
 * library's own limiters, and scores every lane against the exact oracle. The same scenario
 * (seed included) always gives the same result. `scenario` may be unchecked data (parsed JSON or
 * YAML): it is checked first, and bad input throws a `SimulatorError` naming the field. Trace
 * sources must carry their rows (the command line reads `file` into `rows`).
 *
 * @example
 * const result = await simulate({
 *   durationMs: 3000,
 *   traffic: [{ type: 'boundary-burst', boundaryMs: 1000, count: 100 }],
 *   policies: [
 *     { name: 'fixed', policy: { type: 'fixed-window', limit: 100, windowMs: 1000 } },
 *     { name: 'log', policy: { type: 'sliding-window-log', limit: 100, windowMs: 1000 } },
 *   ],
 * });
 * result.lanes[0].score.maxInWindow;   // 200: twice the limit across the boundary
 */
export async function simulate(scenario: Scenario | unknown, options: SimulateOptions = {}): Promise<SimulationResult> {
  const checked = parseScenario(scenario);
  const arrivals = generateArrivals(checked.traffic, checked.durationMs, checked.seed);
  const chartKeyId = busiestKey(arrivals);
  const runs = await runLanes(checked, arrivals, { chartKeyId, keepStates: options.keepStates === true });
  let horizonMs = checked.durationMs;
  for (const { admittedAtMs } of runs) {
    for (let i = 0; i < admittedAtMs.length; i++)
      if (admittedAtMs[i]! >= horizonMs) horizonMs = admittedAtMs[i]! + checked.bucketMs / 2;
  }
  const steps = Math.max(1, Math.min(MAX_STEPS, Math.ceil(horizonMs / checked.bucketMs)));
  // The oracle's working order of admissions, shared by the lanes it scores one after the other.
  const buffer = new Int32Array(arrivals.length);
  const lanes = checked.policies.map((lane, index) =>
    laneResult(lane, arrivals, runs[index]!, { bucketMs: checked.bucketMs, steps, chartKeyId, buffer }),
  );
  return {
    scenario: checked,
    arrivals,
    horizonMs: steps * checked.bucketMs,
    steps,
    offered: offeredLoad(arrivals, checked.bucketMs, steps),
    chartKey: arrivals.keys[chartKeyId] ?? 'k',
    lanes,
  };
}

/** Runs every lane in turn, each watching the chart key; a value the library refuses names the lane's policy field. */
async function runLanes(
  checked: Scenario,
  arrivals: Arrivals,
  options: { chartKeyId: number; keepStates: boolean },
): Promise<LaneRun[]> {
  const stepsInDuration = Math.max(1, Math.ceil(checked.durationMs / checked.bucketMs));
  const runs: LaneRun[] = [];
  for (const [index, lane] of checked.policies.entries()) {
    const path = `policies[${index}]`;
    const reading = stateReadingOf(lane.policy);
    const watch: Watch = {
      reading,
      key: arrivals.keys[options.chartKeyId] ?? 'k',
      probe: new StateProbe(checked.bucketMs, stepsInDuration),
      recorder: new StateRecorder({
        keyIds: arrivals.keyIds,
        chartKeyId: options.chartKeyId,
        stepMs: checked.bucketMs,
        fuller: reading.fuller,
        keepAll: options.keepStates,
      }),
    };
    try {
      runs.push(await runLane(lane, arrivals, { seed: checked.seed + index, path, watch }));
    } catch (error) {
      throw scenarioErrorOf(error, `${path}.policy`);
    }
  }
  return runs;
}

function laneResult(
  lane: LaneSpec,
  arrivals: Arrivals,
  run: LaneRun,
  cut: { bucketMs: number; steps: number; chartKeyId: number; buffer: Int32Array },
): LaneResult {
  const promise = promiseOf(lane.policy);
  const reading = stateReadingOf(lane.policy);
  const { score, hottest } = scoreLane(arrivals, run.admittedAtMs, promise, cut.chartKeyId, cut.buffer);
  const series = seriesOf(arrivals, run, hottest, { ...cut, windowMs: promise.windowMs, reading });
  return {
    name: lane.name,
    description: describeLane(lane),
    promise,
    score,
    series,
    reading,
    admittedAtMs: run.admittedAtMs,
    stateAfter: run.stateAfter,
    nodes: run.nodes,
    nodeOf: run.nodeOf,
    leases:
      lane.distribution?.lease === undefined
        ? undefined
        : leaseReportOf(lane, buildAlgorithm(lane.policy as LimiterPolicySpec, 'policy'), arrivals, run),
  };
}

/** The key offered the most cost (the first of equals): the one the per-key charts follow. */
function busiestKey(arrivals: Arrivals): number {
  const offered = new Float64Array(arrivals.keys.length);
  for (let i = 0; i < arrivals.length; i++) offered[arrivals.keyIds[i]!]! += arrivals.costs[i]!;
  let best = 0;
  for (let k = 1; k < offered.length; k++) if (offered[k]! > offered[best]!) best = k;
  return best;
}

/**
 * runLane runs one lane on the engine its policy and mode call for, and returns what it recorded:
 * each arrival's admission time (NaN: refused), the key's state after each decision (when the
 * watch's recorder keeps them), and `context.watch`'s key's state at each step end (default: the
 * first key, over 100 steps of 1 s, keeping no per-request states).
 */
export async function runLane(
  lane: LaneSpec,
  arrivals: Arrivals,
  context: { seed: number; path: string; watch?: Watch },
): Promise<LaneRun> {
  const spec = lane.policy;
  const reading = stateReadingOf(spec);
  const watch = context.watch ?? {
    reading,
    key: arrivals.keys[0] ?? 'k',
    probe: new StateProbe(1000, 100),
    recorder: new StateRecorder({
      keyIds: arrivals.keyIds,
      chartKeyId: 0,
      stepMs: 1000,
      fuller: reading.fuller,
      keepAll: false,
    }),
  };
  const distribution = lane.distribution;
  const seed = context.seed;
  if (spec.type === 'shaping-queue')
    return runShape(spec, arrivals, { watch, distribution, maxWaitMs: Infinity, seed });
  if (spec.type === 'smooth-bursty' || spec.type === 'smooth-warming-up')
    return runSmooth(spec, arrivals, { watch, distribution, maxWaitMs: lane.maxWaitMs, seed });
  const algorithm = buildAlgorithm(spec, `${context.path}.policy`);
  if (distribution?.lease !== undefined) return runLeaseLane(arrivals, { algorithm, distribution, seed }, watch);
  const outage = distribution?.outage;
  const localAlgorithm =
    outage?.onError === 'local'
      ? buildAlgorithm(spec as LimiterPolicySpec, `${context.path}.policy`, outage.share)
      : undefined;
  const nodes = { algorithm, localAlgorithm, distribution, seed: context.seed };
  if (lane.mode === 'wait') return runWait(arrivals, { ...nodes, maxWaitMs: lane.maxWaitMs }, watch);
  if (distribution === undefined) return runRefuse(algorithm, arrivals, watch);
  return runDistributed(arrivals, nodes, watch);
}

function describeLane(lane: LaneSpec): string {
  const parts = [describePolicy(lane.policy)];
  if (lane.mode === 'wait')
    parts.push(`wait up to ${Number.isFinite(lane.maxWaitMs) ? `${lane.maxWaitMs} ms` : 'any time'}`);
  const d = lane.distribution;
  const local = (lane.policy.type === 'shaping-queue' || lane.policy.type.startsWith('smooth-')) && d?.shared !== true;
  if (d !== undefined && local) parts.push(`${d.nodes} nodes, each its own at share ${round(d.share)} of the rate`);
  else if (d?.lease !== undefined) parts.push(...describeLeases(d));
  else if (d !== undefined) {
    parts.push(
      `${d.nodes} nodes${lane.policy.type.startsWith('smooth-') ? ' sharing one limiter on the store' : ''}, round trip ${d.roundTripMs} ms${d.roundTripJitterMs > 0 ? ` + up to ${d.roundTripJitterMs} ms` : ''}, skew ${Math.min(...d.skewMs)}..${Math.max(...d.skewMs)} ms`,
    );
    const o = d.outage;
    if (o !== undefined)
      parts.push(
        `store out ${o.startMs}-${o.endMs} ms: ${o.onError === 'local' ? `local share ${round(o.share)}` : o.onError}`,
      );
  }
  return parts.join('; ');
}

/** A leased fleet in words: nodes and lease, round trip, weights when uneven, deaths. */
function describeLeases(d: DistributionSpec): string[] {
  const parts = [
    `${d.nodes} nodes leasing for ${d.lease!.leaseMs} ms, share ${d.lease!.maxOutstandingShare} outstanding, round trip ${d.roundTripMs} ms${d.roundTripJitterMs > 0 ? ` + up to ${d.roundTripJitterMs} ms` : ''}`,
  ];
  if (d.weights.some((w) => w !== d.weights[0])) parts.push(`weights ${d.weights.join(':')}`);
  for (const death of d.deaths) parts.push(`node ${death.node} dies at ${death.atMs} ms`);
  return parts;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function offeredLoad(arrivals: Arrivals, bucketMs: number, steps: number): Float64Array {
  const offered = new Float64Array(steps);
  for (let i = 0; i < arrivals.length; i++)
    offered[Math.min(steps - 1, Math.floor(arrivals.atMs[i]! / bucketMs))]! += arrivals.costs[i]!;
  return offered;
}
