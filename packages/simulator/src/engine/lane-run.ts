import type { DistributionSpec } from '../scenario.js';
import type { StateProbe, StateReading, StateRecorder } from '../state.js';

/** LaneRun is what an engine records of one lane: per request, and for the chart key per step. */
export interface LaneRun {
  /** Each arrival's admission time in ms, NaN when refused. */
  readonly admittedAtMs: Float64Array;
  /** Each arrival's key state right after it was decided, in the reading's unit (NaN: none to read), when kept. */
  readonly stateAfter: Float32Array | undefined;
  /** The chart key's fullest state after a decision in each chart step (NaN: none there); the last step takes all later ones. */
  readonly stateFullest: Float64Array;
  /** How many gateway nodes decided: request i went to node `i % nodes`. */
  readonly nodes: number;
  /** The chart key's state at the end of each chart step (NaN where the run never got there). */
  readonly stateAtStepEnd: Float64Array;
}

/** Watch is what an engine records the state of: the reading, and the key whose state it samples per step. */
export interface Watch {
  readonly reading: StateReading;
  /** The key sampled at every step end (the chart key). */
  readonly key: string;
  readonly probe: StateProbe;
  /** Where the engine notes the state after each decision. */
  readonly recorder: StateRecorder;
}

/** ZERO is the cost of a peek that reads a key's state without asking for anything. */
export const ZERO = { cost: 0 } as const;

/** QueueContext is what the queueing engines need beside the policy and the traffic. */
export interface QueueContext {
  readonly watch: Watch;
  readonly distribution: DistributionSpec | undefined;
  /** Longest wait, in ms (Infinity: always wait); for the smooth limiters. */
  readonly maxWaitMs: number;
  /** Seed of the round-trip jitter draws (a smooth limiter shared on the store). */
  readonly seed: number;
}
