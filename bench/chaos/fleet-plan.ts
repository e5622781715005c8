/**
 * What the fleet section's parent (fleet.ts) and its processes (fleet-node.ts) share: the sides,
 * the policies and their numbers, the hot key, and the records a process prints.
 */

/** FleetSide names a side of the fleet section. */
export type FleetSide = 'floodgate' | 'fail-open' | 'no-write-back' | 'rlf-insured';
/** FLEET_SIDES lists them in table order. */
export const FLEET_SIDES: readonly FleetSide[] = ['floodgate', 'fail-open', 'no-write-back', 'rlf-insured'];
/** FleetPolicy names a policy of the fleet section. */
export type FleetPolicy = 'token-bucket' | 'fixed-window';

/** The policies, chosen so that a 10 s outage's bound is a few hundred: 300 + 30/s × 10 s, and 300 a window. */
export const BUCKET = { capacity: 300, refillPerSecond: 30 } as const;
export const WINDOW = { limit: 300, windowMs: 20_000 } as const;
/** The hot key, on which every process decides. */
export const HOT_KEY = 'hot';

/** The prefix of a side's keys on Redis: the same in every process, so they share the key and the census. */
export const prefixOf = (side: FleetSide): string => `fleet-${side}:`;

/** NodeArgs is what the parent passes, in JSON. */
export interface NodeArgs {
  readonly port: number;
  readonly hotPerSecond: number;
}

/** HotSpan is when the hot key is offered `hotPerSecond`, in epoch ms: the parent's `hot` line. */
export interface HotSpan {
  readonly fromMs: number;
  readonly untilMs: number;
}

/**
 * StreamRecords is one (side, policy)'s hot key in this process: the epoch ms (when answered) and
 * source (0 Redis, 1 not Redis) of every admission; decisions asked, refused and failed; the largest limit the local fallback showed
 * (`remaining + 1` on an admission), from which its share of the limit reads; and the answers'
 * reasons per epoch second (floodgate's `reason`; for rate-limiter-flexible `redis` or `insurance`).
 */
export interface StreamRecords {
  readonly side: FleetSide;
  readonly policy: FleetPolicy;
  admittedAtMs: number[];
  admittedBy: number[];
  asked: number;
  refused: number;
  errors: number;
  unsettled: number;
  localLimit: number;
  reasonsBySecond: Record<string, Record<string, number>>;
}

/** NodeRecords is what a process prints: its streams. */
export interface NodeRecords {
  readonly pid: number;
  readonly streams: StreamRecords[];
}
