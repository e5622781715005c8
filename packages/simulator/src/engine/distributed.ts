import type { ConsumeOptions } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import type { OutageSpec } from '../scenario.js';
import { ZERO, type LaneRun, type Watch } from './lane-run.js';
import { fleetOf, inOutage, type GatewayNode, type NodeOptions } from './nodes.js';
import { decideOrRefuse, laneRun } from './refuse.js';

/**
 * runDistributed returns, for each arrival, the time it was let through (when its node had the
 * store's answer) or NaN when refused, with the key's state after each decision, for `nodes`
 * gateway nodes sharing one store ({@link fleetOf}). A request let through waits the full round
 * trip. While the store is out (`outage`), a node waits `timeoutMs` and then admits
 * (`fail-open`), refuses (`fail-closed`) or decides on its own local limiter holding `share` of
 * the limit (`local`), none of which the shared store ever learns of.
 */
export function runDistributed(arrivals: Arrivals, options: NodeOptions, watch: Watch): LaneRun {
  const fleet = fleetOf(arrivals, options);
  const { nodes, roundTripMs, observer } = fleet;
  const outage = options.distribution?.outage;
  const read = watch.reading.of!;
  const peek = (at: number): number => {
    observer.clock.set(at);
    return read(observer.limiter.peekSync(watch.key, ZERO));
  };
  const admittedAtMs = new Float64Array(arrivals.length);
  const consume: ConsumeOptions = { cost: 1 };
  for (const i of fleet.order) {
    const node = nodes[i % nodes.length]!;
    const t = arrivals.atMs[i]!;
    const reachMs = t + roundTripMs[i]! / 2;
    if (reachMs >= watch.probe.nextMs) watch.probe.until(reachMs, peek);
    const key = arrivals.keys[arrivals.keyIds[i]!]!;
    consume.cost = arrivals.costs[i]!;
    if (inOutage(outage, reachMs)) {
      const alone = decideAlone(node, outage!, { atMs: t, key, consume });
      admittedAtMs[i] = alone.admittedAtMs;
      watch.recorder.note(i, t, alone.state === undefined ? NaN : read(alone.state));
      continue;
    }
    node.clock.set(t + node.skewMs);
    const decision = decideOrRefuse(node.shared, key, consume);
    admittedAtMs[i] = decision?.allowed === true ? t + roundTripMs[i]! : NaN;
    watch.recorder.note(i, t, read(decision ?? node.shared.peekSync(key, ZERO)));
  }
  watch.probe.until(Infinity, peek);
  return laneRun(admittedAtMs, nodes.length, watch);
}

/** A node's own answer while the store is out, given after it waited `timeoutMs` for the store (with its local limiter's decision, if any). */
function decideAlone(
  node: GatewayNode,
  outage: OutageSpec,
  request: { atMs: number; key: string; consume: ConsumeOptions },
): { admittedAtMs: number; state: ReturnType<typeof decideOrRefuse> } {
  const decidedAtMs = request.atMs + outage.timeoutMs;
  if (outage.onError === 'fail-open') return { admittedAtMs: decidedAtMs, state: undefined };
  if (outage.onError === 'fail-closed' || node.local === undefined) return { admittedAtMs: NaN, state: undefined };
  node.clock.set(decidedAtMs + node.skewMs);
  const decision = decideOrRefuse(node.local, request.key, request.consume);
  return { admittedAtMs: decision?.allowed === true ? decidedAtMs : NaN, state: decision };
}
