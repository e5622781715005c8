import type { NodeClock, Random, Request } from './clocks.js';
import { limitOf, scaleMs, type PolicyKind, type PolicySpec } from '../support/policies.js';

/** specOf returns a random policy of `kind`, with windows from 300 ms to 10 s. */
export function specOf(kind: PolicyKind, random: Random): PolicySpec {
  switch (kind) {
    case 'tokenBucket':
    case 'leakyBucket':
      return { kind, capacity: random.int(1, 20), perSecond: random.pick([1, 2.5, 10, 50]) };
    case 'gcra':
      return { kind, rate: random.int(1, 20), periodMs: random.pick([1000, 2000, 5000]), maxBurst: random.int(0, 10) };
    case 'fixedWindow':
    case 'weighted':
      return { kind, limit: random.int(1, 20), windowMs: random.pick([300, 1000, 2500, 10_000]) };
    case 'slidingWindowLog':
      return { kind, limit: random.int(1, 10), windowMs: random.pick([300, 1000, 2500, 10_000]) };
    case 'subWindows': {
      const subWindows = random.int(1, 6);
      return { kind, limit: random.int(1, 20), subWindows, windowMs: subWindows * random.pick([100, 250, 1000]) };
    }
  }
}

/** skewedNodes returns 3 to 5 node clocks each off real time by up to `maxSkewMs` either way. */
export function skewedNodes(random: Random, maxSkewMs: number): NodeClock[] {
  return Array.from({ length: random.int(3, 5) }, () => ({
    offsetMs: random.between(-maxSkewMs, maxSkewMs),
    steps: [],
  }));
}

/** StreamOptions shapes {@link streamOf}'s requests. */
export interface StreamOptions {
  readonly startMs: number;
  readonly count: number;
  readonly nodes: number;
  /** Whether buckets and GCRA get some reservations (waits up to 500 ms) among their consumes. */
  readonly reserves: boolean;
}

/**
 * streamOf returns `count` requests in real-time order at about three times the policy's rate, in
 * bursts now and then, spread over the nodes at random: costs mostly 1, at most the limit.
 */
export function streamOf(spec: PolicySpec, random: Random, o: StreamOptions): Request[] {
  const limit = limitOf(spec);
  const meanGapMs = scaleMs(spec) / (3 * limit);
  const canReserve = o.reserves && (spec.kind === 'tokenBucket' || spec.kind === 'leakyBucket' || spec.kind === 'gcra');
  const requests: Request[] = [];
  let realMs = o.startMs;
  for (let i = 0; i < o.count; i++) {
    if (random.next() > 0.1) realMs += Math.round(-Math.log(1 - random.next()) * meanGapMs * 10) / 10;
    const cost = random.next() < 0.8 ? 1 : random.int(1, Math.max(1, Math.min(limit, 3)));
    const node = random.int(0, o.nodes - 1);
    const maxWaitMs = canReserve && random.next() < 0.25 ? random.pick([0, 50, 500]) : undefined;
    requests.push(maxWaitMs === undefined ? { realMs, node, cost } : { realMs, node, cost, maxWaitMs });
  }
  return requests;
}
