import { Limiter, ManualClock, type Algorithm, type ConsumeOptions } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { SeededRandom } from '../random.js';
import type { DistributionSpec, OutageSpec } from '../scenario.js';
import { consumeOrRefuse, storeFor } from './refuse.js';

/** DistributedOptions configures {@link runDistributed}. */
export interface DistributedOptions {
  /** The policy every node applies through the shared store. */
  algorithm: Algorithm;
  /** The policy holding `outage.share` of the limit, for nodes deciding locally (outage `local`). */
  localAlgorithm: Algorithm | undefined;
  distribution: DistributionSpec;
  /** Seed of the round-trip jitter draws. */
  seed: number;
}

/** One gateway node: its clock (true time plus its skew) and its limiters. */
interface GatewayNode {
  readonly skewMs: number;
  readonly clock: ManualClock;
  readonly shared: Limiter;
  readonly local: Limiter | undefined;
}

/**
 * runDistributed returns, for each arrival, the time it was let through (when its node had the
 * store's answer) or NaN when refused, for `nodes` gateway nodes sharing one store.
 *
 * Requests go to the nodes in turn (round robin). The shared store is one `MemoryStore` reached
 * after half a round trip (plus a random jitter, which reorders requests at the store); each
 * node stamps its requests with its own clock, off true time by its skew, so the store sees
 * windows and refills at each node's idea of the time. A request let through waits the full
 * round trip. While the store is out (`outage`), a node waits `timeoutMs` and then admits
 * (`fail-open`), refuses (`fail-closed`) or decides on its own local limiter holding `share` of
 * the limit (`local`), none of which the shared store ever learns of.
 */
export function runDistributed(arrivals: Arrivals, options: DistributedOptions): Float64Array {
  const { distribution, algorithm } = options;
  const store = storeFor(arrivals);
  const nodes: GatewayNode[] = distribution.skewMs.map((skewMs) => {
    const clock = new ManualClock(0);
    const local =
      options.localAlgorithm === undefined
        ? undefined
        : new Limiter({ policy: options.localAlgorithm, store: storeFor(arrivals), clock });
    return { skewMs, clock, shared: new Limiter({ policy: algorithm, store, clock }), local };
  });
  const random = new SeededRandom(options.seed);
  const roundTripMs = new Float64Array(arrivals.length);
  for (let i = 0; i < arrivals.length; i++)
    roundTripMs[i] = distribution.roundTripMs + distribution.roundTripJitterMs * random.next();
  const order = storeOrder(arrivals, roundTripMs);
  const admittedAtMs = new Float64Array(arrivals.length);
  const consume: ConsumeOptions = { cost: 1 };
  for (const i of order) {
    const node = nodes[i % nodes.length]!;
    const t = arrivals.atMs[i]!;
    const key = arrivals.keys[arrivals.keyIds[i]!]!;
    consume.cost = arrivals.costs[i]!;
    const outage = distribution.outage;
    if (outage !== undefined && inOutage(outage, t + roundTripMs[i]! / 2)) {
      admittedAtMs[i] = decideAlone(node, outage, t, key, consume);
      continue;
    }
    node.clock.set(t + node.skewMs);
    admittedAtMs[i] = consumeOrRefuse(node.shared, key, consume) ? t + roundTripMs[i]! : NaN;
  }
  return admittedAtMs;
}

function inOutage(outage: OutageSpec, atMs: number): boolean {
  return atMs >= outage.startMs && atMs < outage.endMs;
}

/** A node's own answer while the store is out, given after it waited `timeoutMs` for the store. */
function decideAlone(
  node: GatewayNode,
  outage: OutageSpec,
  atMs: number,
  key: string,
  consume: ConsumeOptions,
): number {
  const decidedAtMs = atMs + outage.timeoutMs;
  if (outage.onError === 'fail-open') return decidedAtMs;
  if (outage.onError === 'fail-closed' || node.local === undefined) return NaN;
  node.clock.set(decidedAtMs + node.skewMs);
  return consumeOrRefuse(node.local, key, consume) ? decidedAtMs : NaN;
}

/** The order requests reach the store: by arrival plus half their round trip, ties in arrival order. */
function storeOrder(arrivals: Arrivals, roundTripMs: Float64Array): Int32Array {
  const order = new Int32Array(arrivals.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  let sorted = true;
  for (let i = 1; i < order.length && sorted; i++)
    sorted = arrivals.atMs[i]! + roundTripMs[i]! / 2 >= arrivals.atMs[i - 1]! + roundTripMs[i - 1]! / 2;
  if (sorted) return order;
  const reachMs = (i: number): number => arrivals.atMs[i]! + roundTripMs[i]! / 2;
  return order.sort((a, b) => reachMs(a) - reachMs(b) || a - b);
}
