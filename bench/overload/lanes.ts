/**
 * The overload bench's lanes: one `floodgate serve` config each, the same route in front of the
 * same upstream, differing only in how the route protects it.
 */
import type { TierMix } from './load.js';

/** LaneId names a lane in tables, JSON and charts. */
export type LaneId = 'none' | 'token-bucket' | 'static' | 'adaptive';

/** Lane is one way of protecting the upstream. */
export interface Lane {
  readonly id: LaneId;
  /** What the lane is, for the tables. */
  readonly label: string;
  /** A short name, for chart legends. */
  readonly short: string;
  /** The route's protection: YAML lines to append under the route (indented 4 spaces), empty for none. */
  readonly protection: (capacity: KnownCapacity, tiers: TierMix | undefined) => string;
  /** True when the gateway learns something during a run (it is restarted before each scenario). */
  readonly learns: boolean;
}

/** KnownCapacity is what a lane tuned to the upstream is told: requests a second and slots. */
export interface KnownCapacity {
  readonly perSecond: number;
  readonly slots: number;
}

/** The gateway's wait line, the same for both concurrency lanes: a short queue bounded in count and time. */
export const WAIT_LINE: { maxQueue: number; readonly maxWaitMs: number } = { maxQueue: 32, maxWaitMs: 200 };

/** setMaxQueue sets the wait line's bound for every concurrency lane (0: no wait line, every shed at once). */
export function setMaxQueue(maxQueue: number): void {
  if (!Number.isSafeInteger(maxQueue) || maxQueue < 0)
    throw new Error(`--max-queue must be a whole number from 0, got ${maxQueue}`);
  WAIT_LINE.maxQueue = maxQueue;
}

/** The rate the token bucket is tuned to, as a share of the known capacity (a little under it, as an operator would). */
export const TOKEN_BUCKET_SHARE = 0.95;

function priorityYaml(tiers: TierMix | undefined): string {
  if (tiers === undefined) return '';
  const names = tiers.tiers.map((t) => t.name);
  return `\n    priority: { tiers: [${names.join(', ')}], header: ${tiers.header}, default: ${names[names.length - 1]!} }`;
}

/** LANES are the four lanes, in table order. */
export const LANES: readonly Lane[] = [
  { id: 'none', label: 'no protection (no rules)', short: 'no protection', learns: false, protection: () => '' },
  {
    id: 'token-bucket',
    label: 'token bucket at the known rate',
    short: 'token bucket 380/s',
    learns: false,
    protection: (c) => {
      const rate = Math.round(c.perSecond * TOKEN_BUCKET_SHARE);
      return `\n    rules:\n      - name: capacity\n        key: { type: route }\n        policy: { algorithm: tokenBucket, capacity: ${Math.max(1, Math.round(rate / 10))}, refillPerSecond: ${rate} }`;
    },
  },
  {
    id: 'static',
    label: 'static concurrency limit (known slots)',
    short: 'static limit 8',
    learns: false,
    protection: (c, tiers) =>
      `\n    concurrency: { limit: ${c.slots}, maxQueue: ${WAIT_LINE.maxQueue}, maxWaitMs: ${WAIT_LINE.maxWaitMs} }${priorityYaml(tiers)}`,
  },
  {
    id: 'adaptive',
    label: 'adaptive concurrency (told nothing)',
    short: 'adaptive',
    learns: true,
    protection: (_c, tiers) =>
      `\n    adaptive: { maxQueue: ${WAIT_LINE.maxQueue}, maxWaitMs: ${WAIT_LINE.maxWaitMs} }${priorityYaml(tiers)}`,
  },
];

/** gatewayYaml returns the whole config of `lane` in front of the upstream on `upstreamPort`. */
export function gatewayYaml(lane: Lane, upstreamPort: number, capacity: KnownCapacity, tiers?: TierMix): string {
  return `store: { type: memory }\nroutes:\n  - name: work\n    upstream: http://127.0.0.1:${upstreamPort}${lane.protection(capacity, tiers)}\n`;
}
