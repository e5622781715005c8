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
  /** The node each request went to, when not `i % nodes` (a leased fleet's weights and deaths). */
  readonly nodeOf?: Int32Array;
  /** A leased fleet's calls to the store and deaths, when the lane leases. */
  readonly fleet?: FleetRecord;
  /** The same fleet deciding every request on the store, when the lane leases: its peer in the lease report. */
  readonly perRequest?: LaneRun;
}

/** FleetRecord is what a fleet on one store records beside its admissions. */
export interface FleetRecord {
  /** Calls that reached the store from each node: asks, returns and per-request decisions. */
  readonly storeOps: readonly number[];
  /** When each node died, in ms (NaN: it lived). */
  readonly diedAtMs: readonly number[];
  /** Requests each node had in hand when it died, never answered (counted as refused). */
  readonly lost: readonly number[];
  /** Units each node held of the watched key on the store's ledger at the end of each chart step (0 once its record ended; NaN where the run never got there). */
  readonly heldAtStepEnd: readonly Float64Array[];
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
