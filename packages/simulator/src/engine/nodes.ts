import { Limiter, ManualClock, type Algorithm } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { SeededRandom } from '../random.js';
import type { DistributionSpec, OutageSpec } from '../scenario.js';
import { storeFor } from './refuse.js';

/** NodeOptions configures the gateway nodes of a distributed lane. */
export interface NodeOptions {
  /** The policy every node applies through the shared store. */
  readonly algorithm: Algorithm;
  /** The policy holding `outage.share` of the limit, for nodes deciding locally (outage `local`). */
  readonly localAlgorithm: Algorithm | undefined;
  /** One node on true time when undefined. */
  readonly distribution: DistributionSpec | undefined;
  /** Seed of the round-trip jitter draws. */
  readonly seed: number;
}

/** GatewayNode is one gateway node: its clock (true time plus its skew) and its limiters. */
export interface GatewayNode {
  readonly skewMs: number;
  readonly clock: ManualClock;
  readonly shared: Limiter;
  readonly local: Limiter | undefined;
}

/** Fleet is the nodes of a lane around one shared store, with a limiter on true time to read that store. */
export interface Fleet {
  readonly nodes: readonly GatewayNode[];
  /** Reads the shared store at true time (the chart's probe); never decides a request. */
  readonly observer: { readonly clock: ManualClock; readonly limiter: Limiter };
  /** Each request's round trip to the store and back, in ms. */
  readonly roundTripMs: Float64Array;
  /** Request indices in the order they reach the store (arrival plus half the round trip). */
  readonly order: Int32Array;
}

/**
 * fleetOf returns the gateway nodes sharing one memory store: request i goes to node `i % nodes`,
 * reaches the store after half its round trip (the distribution's plus a seeded jitter, which
 * reorders requests at the store), and each node stamps its requests with its own skewed clock.
 */
export function fleetOf(arrivals: Arrivals, options: NodeOptions): Fleet {
  const distribution = options.distribution;
  const store = storeFor(arrivals);
  const skews = distribution?.skewMs ?? [0];
  const nodes = skews.map((skewMs): GatewayNode => {
    const clock = new ManualClock(0);
    const local =
      options.localAlgorithm === undefined
        ? undefined
        : new Limiter({ policy: options.localAlgorithm, store: storeFor(arrivals), clock });
    return { skewMs, clock, shared: new Limiter({ policy: options.algorithm, store, clock }), local };
  });
  const clock = new ManualClock(0);
  const roundTripMs = roundTripsOf(arrivals, distribution, options.seed);
  return {
    nodes,
    observer: { clock, limiter: new Limiter({ policy: options.algorithm, store, clock }) },
    roundTripMs,
    order: storeOrder(arrivals, roundTripMs),
  };
}

/**
 * roundTripsOf returns each request's round trip to the store and back, in ms: the distribution's
 * plus a seeded jitter of up to `roundTripJitterMs` (all 0 without a distribution).
 */
export function roundTripsOf(
  arrivals: Arrivals,
  distribution: DistributionSpec | undefined,
  seed: number,
): Float64Array {
  const roundTripMs = new Float64Array(arrivals.length);
  if (distribution === undefined) return roundTripMs;
  const random = new SeededRandom(seed);
  for (let i = 0; i < arrivals.length; i++)
    roundTripMs[i] = distribution.roundTripMs + distribution.roundTripJitterMs * random.next();
  return roundTripMs;
}

/** inOutage returns whether the store is out at `atMs`. */
export function inOutage(outage: OutageSpec | undefined, atMs: number): boolean {
  return outage !== undefined && atMs >= outage.startMs && atMs < outage.endMs;
}

/** storeOrder returns the order requests reach the store: by arrival plus half their round trip, ties in arrival order. */
export function storeOrder(arrivals: Arrivals, roundTripMs: Float64Array): Int32Array {
  const order = new Int32Array(arrivals.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  let sorted = true;
  for (let i = 1; i < order.length && sorted; i++)
    sorted = arrivals.atMs[i]! + roundTripMs[i]! / 2 >= arrivals.atMs[i - 1]! + roundTripMs[i - 1]! / 2;
  if (sorted) return order;
  const reachMs = (i: number): number => arrivals.atMs[i]! + roundTripMs[i]! / 2;
  return order.sort((a, b) => reachMs(a) - reachMs(b) || a - b);
}
