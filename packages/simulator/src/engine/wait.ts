import { FloodgateError, type Limiter } from 'floodgate';
import type { Arrivals } from '../arrivals.js';
import { ZERO, type LaneRun, type Watch } from './lane-run.js';
import { laneRun } from './refuse.js';
import { fleetOf, inOutage, type Fleet, type GatewayNode, type NodeOptions } from './nodes.js';

/** Codes of an `acquire` that gave up on a request: the request counts as refused. */
const REFUSALS = new Set(['WAIT_TIMEOUT', 'QUEUE_FULL', 'COST_EXCEEDS_LIMIT', 'INVALID_COST']);

/** Lets every promise reaction queued so far run (a macrotask turn drains the microtask queue). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * runWait returns, for each arrival, the time `Limiter.acquire` admitted it, or NaN when it gave
 * up (`maxWaitMs` passed or could not be met), with the key's state right after. With a
 * distribution, each request waits on its node ({@link fleetOf}): it reaches the store after half
 * its round trip and its answer comes back after the other half; while the store is out, a node
 * admits (`fail-open`), refuses (`fail-closed`) or waits on its local limiter (`local`) after
 * `timeoutMs`. Virtual time moves from one event to the next: a request reaching the store, or
 * the next timer a limiter set on a node's clock; after each move the promises settle before
 * time moves again, so each admission is stamped with the time it happened.
 */
export async function runWait(
  arrivals: Arrivals,
  options: NodeOptions & { maxWaitMs: number },
  watch: Watch,
): Promise<LaneRun> {
  const fleet = fleetOf(arrivals, options);
  const { nodes, observer, order, roundTripMs } = fleet;
  const outage = options.distribution?.outage;
  const read = watch.reading.of!;
  const peek = (at: number): number => {
    observer.clock.set(at);
    return read(observer.limiter.peekSync(watch.key, ZERO));
  };
  const admittedAtMs = new Float64Array(arrivals.length).fill(NaN);
  let nowMs = 0;
  let failure: unknown;
  const wait = (i: number, limiter: Limiter, extraMs: number): void => {
    const key = arrivals.keys[arrivals.keyIds[i]!]!;
    const settled = (admitted: boolean) => (): void => {
      if (admitted) admittedAtMs[i] = nowMs + extraMs;
      watch.recorder.note(i, nowMs, read(limiter.peekSync(key, ZERO)));
    };
    limiter.acquire(key, { cost: arrivals.costs[i]!, maxWaitMs: options.maxWaitMs }).then(settled(true), (error) => {
      if (error instanceof FloodgateError && REFUSALS.has(error.code)) settled(false)();
      else failure ??= error;
    });
  };
  const start = (i: number): void => {
    const node = nodes[i % nodes.length]!;
    if (!inOutage(outage, nowMs)) return wait(i, node.shared, roundTripMs[i]! / 2);
    if (outage!.onError === 'fail-open') admittedAtMs[i] = arrivals.atMs[i]! + outage!.timeoutMs;
    else if (outage!.onError === 'local' && node.local !== undefined) wait(i, node.local, outage!.timeoutMs);
  };
  for (let k = 0; k < order.length || timersLeft(fleet);) {
    const nextReachMs = k < order.length ? reachMs(arrivals, fleet, order[k]!) : Infinity;
    nowMs = Math.min(nextReachMs, nextTimerMs(fleet));
    watch.probe.until(nowMs, peek);
    for (const node of nodes) node.clock.set(clockTimeAt(node, nowMs));
    for (; k < order.length && reachMs(arrivals, fleet, order[k]!) === nowMs; k++) start(order[k]!);
    await settle();
    if (failure !== undefined) throw failure;
  }
  watch.probe.until(Infinity, peek);
  return laneRun(admittedAtMs, nodes.length, watch);
}

/**
 * The time to set `node`'s clock to at true time `nowMs`: its skewed time, or exactly its next
 * timer's due time when that timer is the one due now (adding and taking away a skew is not
 * exact in floating point, and a timer left a hair in the future would never fire).
 */
function clockTimeAt(node: GatewayNode, nowMs: number): number {
  const dueMs = node.clock.nextTimerAtMs();
  return dueMs !== undefined && dueMs - node.skewMs <= nowMs
    ? Math.max(dueMs, nowMs + node.skewMs)
    : nowMs + node.skewMs;
}

function reachMs(arrivals: Arrivals, fleet: Fleet, i: number): number {
  return arrivals.atMs[i]! + fleet.roundTripMs[i]! / 2;
}

function timersLeft(fleet: Fleet): boolean {
  return fleet.nodes.some((node) => node.clock.timerCount() > 0);
}

/** The true time of the next timer due on any node's clock (a node's clock runs `skewMs` ahead). */
function nextTimerMs(fleet: Fleet): number {
  let next = Infinity;
  for (const node of fleet.nodes) next = Math.min(next, (node.clock.nextTimerAtMs() ?? Infinity) - node.skewMs);
  return next;
}
