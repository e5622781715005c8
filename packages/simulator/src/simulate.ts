import { generateArrivals, type Arrivals } from './arrivals.js';
import { runDistributed } from './engine/distributed.js';
import { runShape, runSmooth } from './engine/queueing.js';
import { runRefuse } from './engine/refuse.js';
import { runWait } from './engine/wait.js';
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
import type { LaneSpec, Scenario } from './scenario.js';
import { seriesOf, type Series } from './series.js';

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
  /** Each arrival's admission time in ms, NaN when refused (parallel to the run's arrivals). */
  readonly admittedAtMs: Float64Array;
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
export async function simulate(scenario: Scenario | unknown): Promise<SimulationResult> {
  const checked = parseScenario(scenario);
  const arrivals = generateArrivals(checked.traffic, checked.durationMs, checked.seed);
  const outcomes: Float64Array[] = [];
  for (const [index, lane] of checked.policies.entries()) {
    const path = `policies[${index}]`;
    try {
      outcomes.push(await runLane(lane, arrivals, { seed: checked.seed + index, path }));
    } catch (error) {
      throw scenarioErrorOf(error, `${path}.policy`);
    }
  }
  let horizonMs = checked.durationMs;
  for (const admittedAtMs of outcomes) {
    for (let i = 0; i < admittedAtMs.length; i++)
      if (admittedAtMs[i]! >= horizonMs) horizonMs = admittedAtMs[i]! + checked.bucketMs / 2;
  }
  const steps = Math.max(1, Math.min(MAX_STEPS, Math.ceil(horizonMs / checked.bucketMs)));
  const lanes = checked.policies.map((lane, index) =>
    laneResult(lane, arrivals, outcomes[index]!, { bucketMs: checked.bucketMs, steps }),
  );
  return {
    scenario: checked,
    arrivals,
    horizonMs: steps * checked.bucketMs,
    steps,
    offered: offeredLoad(arrivals, checked.bucketMs, steps),
    lanes,
  };
}

function laneResult(
  lane: LaneSpec,
  arrivals: Arrivals,
  admittedAtMs: Float64Array,
  cut: { bucketMs: number; steps: number },
): LaneResult {
  const promise = promiseOf(lane.policy);
  const { score, hottest } = scoreLane(arrivals, admittedAtMs, promise);
  const series = seriesOf(arrivals, admittedAtMs, hottest, { ...cut, windowMs: promise.windowMs });
  return { name: lane.name, description: describeLane(lane), promise, score, series, admittedAtMs };
}

/** runLane returns each arrival's admission time (NaN: refused) under one lane, on the engine its policy and mode call for. */
export async function runLane(
  lane: LaneSpec,
  arrivals: Arrivals,
  context: { seed: number; path: string },
): Promise<Float64Array> {
  const spec = lane.policy;
  if (spec.type === 'shaping-queue') return runShape(spec, arrivals);
  if (spec.type === 'smooth-bursty' || spec.type === 'smooth-warming-up')
    return runSmooth(spec, arrivals, lane.maxWaitMs);
  const algorithm = buildAlgorithm(spec, `${context.path}.policy`);
  if (lane.mode === 'wait') return runWait(algorithm, arrivals, lane.maxWaitMs);
  if (lane.distribution === undefined) return runRefuse(algorithm, arrivals);
  const outage = lane.distribution.outage;
  const localAlgorithm =
    outage?.onError === 'local'
      ? buildAlgorithm(spec as LimiterPolicySpec, `${context.path}.policy`, outage.share)
      : undefined;
  return runDistributed(arrivals, { algorithm, localAlgorithm, distribution: lane.distribution, seed: context.seed });
}

function describeLane(lane: LaneSpec): string {
  const parts = [describePolicy(lane.policy)];
  if (lane.mode === 'wait')
    parts.push(`wait up to ${Number.isFinite(lane.maxWaitMs) ? `${lane.maxWaitMs} ms` : 'any time'}`);
  const d = lane.distribution;
  if (d !== undefined) {
    parts.push(
      `${d.nodes} nodes, round trip ${d.roundTripMs} ms${d.roundTripJitterMs > 0 ? ` + up to ${d.roundTripJitterMs} ms` : ''}, skew ${Math.min(...d.skewMs)}..${Math.max(...d.skewMs)} ms`,
    );
    const o = d.outage;
    if (o !== undefined)
      parts.push(
        `store out ${o.startMs}-${o.endMs} ms: ${o.onError === 'local' ? `local share ${round(o.share)}` : o.onError}`,
      );
  }
  return parts.join('; ');
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
