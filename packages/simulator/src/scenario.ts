/**
 * The scenario: what traffic to send, through which policies, for how long. Every field is plain
 * data (JSON or YAML); {@link parseScenario} checks one and fills in defaults.
 */

/** KeySpread spreads a traffic source over `count` keys, Zipf-distributed (`zipfExponent` 0: uniform). */
export interface KeySpread {
  count: number;
  zipfExponent: number;
  /** Key names are `${prefix}${index}`. */
  prefix: string;
}

/** Fields every generated traffic source shares. */
export interface SourceBase {
  /** One fixed key (default `"k"`) unless `keys` spreads the source over many. */
  key: string;
  keys: KeySpread | undefined;
  /** Cost of each request (default 1). */
  cost: number;
}

/** TraceRow is one replayed request: when (ms from the start), on which key, at what cost. */
export interface TraceRow {
  atMs: number;
  key?: string;
  cost?: number;
}

/** TrafficSpec is one source of requests; sources are merged in time order. */
export type TrafficSpec =
  | (SourceBase & { type: 'constant'; ratePerSecond: number; startMs: number; endMs: number })
  | (SourceBase & { type: 'burst'; atMs: number; count: number; spreadMs: number })
  | (SourceBase & { type: 'boundary-burst'; boundaryMs: number; count: number; gapMs: number })
  | (SourceBase & { type: 'ramp'; fromPerSecond: number; toPerSecond: number; startMs: number; endMs: number })
  | (SourceBase & { type: 'poisson'; ratePerSecond: number; startMs: number; endMs: number })
  | (SourceBase & {
      type: 'on-off';
      ratePerSecond: number;
      onMs: number;
      offMs: number;
      startMs: number;
      endMs: number;
    })
  | { type: 'trace'; rows: TraceRow[]; file: string | undefined; format: 'csv' | 'jsonl' | undefined };

/** PolicySpec names one of the library's limiters and its numbers, as its factory takes them. */
export type PolicySpec =
  | { type: 'token-bucket'; capacity: number; refillPerSecond: number }
  | { type: 'leaky-bucket'; capacity: number; leakPerSecond: number }
  | { type: 'fixed-window'; limit: number; windowMs: number }
  | { type: 'sliding-window-log'; limit: number; windowMs: number }
  | { type: 'sliding-window-counter'; limit: number; windowMs: number; subWindows: number | undefined }
  | { type: 'gcra'; rate: number; periodMs: number; maxBurst: number }
  | { type: 'shaping-queue'; intervalMs: number; capacity: number }
  | { type: 'smooth-bursty'; permitsPerSecond: number; maxBurstSeconds: number }
  | { type: 'smooth-warming-up'; permitsPerSecond: number; warmupMs: number; coldFactor: number };

/** The policy types that run through a `Limiter` and a store (the others have their own engines). */
export const LIMITER_POLICIES = [
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'gcra',
] as const;

/** OutageSpec is a window of time in which the shared store does not answer. */
export interface OutageSpec {
  startMs: number;
  endMs: number;
  /** What a node does meanwhile: admit all, refuse all, or decide locally with `share` of the limit. */
  onError: 'fail-open' | 'fail-closed' | 'local';
  /** Share of the limit each node's local limiter holds (for `local`; default 1 / nodes). */
  share: number;
  /** How long a node waits for the store before deciding on its own, in ms (default 0). */
  timeoutMs: number;
}

/** DistributionSpec runs a lane on `nodes` gateway nodes: sharing one store, or each with its own queue or limiter. */
export interface DistributionSpec {
  nodes: number;
  /** Round trip from a node to the store and back, in ms. */
  roundTripMs: number;
  /** Up to this much extra round trip per request, uniformly random, in ms (reorders requests at the store). */
  roundTripJitterMs: number;
  /** Each node's clock offset from true time, in ms (one per node). */
  skewMs: number[];
  outage: OutageSpec | undefined;
  /**
   * Share of the rate each node's own queue or limiter holds, for the policies that live in one
   * process (shaping-queue, smooth-bursty, smooth-warming-up; default 1 / nodes). Those take no
   * round trip, skew or outage: they have no shared store.
   */
  share: number;
  /**
   * Whether the nodes share one state on the store: always for a limiter policy; for a smooth
   * policy when the scenario says `shared: true` (the library's RedisSmoothLimiter, on the store's
   * clock: round trips and an outage apply, skew does not).
   */
  shared: boolean;
  /**
   * Quota leases, when set: each node is the library's `LeasedTable` (what a `LeasedStore` runs),
   * taking units of the key's limit from the shared state and spending them with no round trip.
   * Undefined: every request is decided on the store (per-request decisions).
   */
  lease: LeaseSpec | undefined;
  /** Each node's weight in handing out requests (with leases; default equal: request i goes to node `i % nodes`). */
  weights: number[];
  /** Nodes that die (with leases): from `atMs` on, a node takes no request and nothing it sends arrives. */
  deaths: DeathSpec[];
}

/** LeaseSpec is a lane's lease settings, as a `LeasedStore` and the gateway's `lease:` take them. */
export interface LeaseSpec {
  /** How long granted units may be spent, in ms (default 1000): a dead node holds its units this long. */
  leaseMs: number;
  /** The share of the limit that may be out on leases at once across all nodes (default 0.02): the over-admission bound. */
  maxOutstandingShare: number;
}

/** DeathSpec is one node dying at `atMs`: its requests in flight are lost, and its units stay counted until its lease ends. */
export interface DeathSpec {
  node: number;
  atMs: number;
}

/** LaneSpec is one policy run over the scenario's traffic: one series in every chart. */
export interface LaneSpec {
  /** The lane's label in charts and summaries (unique). */
  name: string;
  policy: PolicySpec;
  /** `refuse` answers at once; `wait` queues each request with `Limiter.acquire` up to `maxWaitMs`. */
  mode: 'refuse' | 'wait';
  /** Longest wait in `wait` mode and for the smooth limiters, in ms (Infinity: no deadline). */
  maxWaitMs: number;
  distribution: DistributionSpec | undefined;
}

/** Scenario is a whole simulation, checked and with its defaults filled in. */
export interface Scenario {
  /** Seed of every random draw (default 1): the same seed gives the same bytes out. */
  seed: number;
  /** Simulated time, in ms from 0. */
  durationMs: number;
  /** Width of one time step in the charts, in ms (default durationMs / 100, at least 1). */
  bucketMs: number;
  traffic: TrafficSpec[];
  policies: LaneSpec[];
}
