/**
 * Fair share of one bucket's budget between the clients reporting it: pure arithmetic on a
 * client's demand and the bucket's totals, with time as an argument. The ledgers (memory and the
 * Lua script on Redis) keep the totals and apply these rules; `redis-script.ts` is this file's twin
 * in Lua, held to it by a differential test against a real Redis.
 *
 * The guarantees, for one bucket with limit L (requests per period):
 * - the sum of grants outstanding (given and not yet expired or released) never exceeds L: a grant
 *   is at most what the others leave free;
 * - under L in total, each client gets its demand plus an equal part of what is left;
 * - over L, the shares are max-min fair (water-filling) over the demands, each raised to a floor of
 *   L / (10 n): a client asking for less than the water level gets what it asks, the others the
 *   level. So a client's share never falls below min(its demand, L / n), whatever the others
 *   report, and a client that reports little, or has just arrived, is never starved.
 */

/** BucketTotals are a bucket's sums over the clients reporting it. */
export interface BucketTotals {
  /** How many clients report the bucket. */
  readonly clients: number;
  /** Their demands summed, in requests per period. */
  readonly demand: number;
  /** Their outstanding grants summed, in requests per period. */
  readonly granted: number;
}

/** FLOOR_SHARE is the part of the limit kept as every client's floor when demand is over it (a tenth, spread evenly). */
export const FLOOR_SHARE = 0.1;

/** DEMAND_WEIGHT is how much a new report weighs in a client's demand (the rest is its previous demand). */
export const DEMAND_WEIGHT = 0.5;

/**
 * demandOf returns a client's demand in requests per period from a report of `requests` (allowed
 * and denied) over `elapsedMs`, averaged with `previous` (undefined for a client's first report).
 * An elapsed time under a second counts as one second: Envoy sends 0 on a bucket's first report,
 * and whole seconds after.
 */
export function demandOf(
  previous: number | undefined,
  report: { readonly requests: number; readonly elapsedMs: number },
  periodSeconds: number,
): number {
  const perPeriod = (report.requests * periodSeconds * 1000) / Math.max(1000, report.elapsedMs);
  return previous === undefined ? perPeriod : previous * (1 - DEMAND_WEIGHT) + perPeriod * DEMAND_WEIGHT;
}

/**
 * waterLevelOf returns the water level of `demands` (every client's of one bucket) under `limit`:
 * the w at which the demands, each raised to the floor `limit * FLOOR_SHARE / n` and capped at w,
 * sum to `limit`. Infinity when the raised demands sum to `limit` or less (no cap needed), and for
 * no demands. Never under `limit / n` otherwise. The Lua script computes it the same way, in the
 * same order (ascending), so both round alike.
 */
export function waterLevelOf(demands: readonly number[], limit: number): number {
  const n = demands.length;
  const floor = (limit * FLOOR_SHARE) / Math.max(1, n);
  const raised = demands.map((d) => Math.max(d, floor)).sort((a, b) => a - b);
  let left = limit;
  for (let i = 0; i < n; i++) {
    const even = left / (n - i);
    if (raised[i]! >= even) return even;
    left -= raised[i]!;
  }
  return Infinity;
}

/** ShareTotals are what {@link targetOf} reads of a bucket: its clients, their summed demand, and its water level (computed only when needed). */
export interface ShareTotals extends Pick<BucketTotals, 'clients' | 'demand'> {
  /** The bucket's {@link waterLevelOf}, or a function that computes it; read only when demand is over the limit. */
  readonly level: number | (() => number);
}

/**
 * targetOf returns the share of `limit` a client with `demand` should have, given the bucket's
 * totals (this client included), in requests per period (not rounded). The targets of all clients
 * sum to `limit`. Under the limit in total: the demand and an equal part of what is left. Over it:
 * the demand raised to the floor, capped at the water level; a demand at or under `limit / n` is
 * under the level, which is then not computed.
 */
export function targetOf(demand: number, totals: ShareTotals, limit: number): number {
  const n = Math.max(1, totals.clients);
  if (totals.demand <= limit) return demand + (limit - totals.demand) / n;
  const raised = Math.max(demand, (limit * FLOOR_SHARE) / n);
  if (raised <= limit / n) return raised;
  return Math.min(raised, typeof totals.level === 'number' ? totals.level : totals.level());
}

/**
 * grantOf returns the whole requests per period to grant a client whose target is `target` and
 * whose outstanding grant is `granted`: the target rounded down, and never more than the others
 * leave free of `limit` (so outstanding grants never sum over it). Never negative.
 */
export function grantOf(target: number, granted: number, totals: BucketTotals, limit: number): number {
  const free = limit - (totals.granted - granted);
  // A hair of tolerance: a target of 3 computed as 2.9999999999999996 is 3.
  return Math.max(0, Math.min(Math.floor(target + 1e-9), free));
}

/** MEANINGFUL_CHANGE is how much of a client's grant a redistribution must move it by to change it (a tenth). */
export const MEANINGFUL_CHANGE = 0.1;

/**
 * changesMeaningfully returns true when a redistribution should move a client's grant from
 * `granted` to `next` (and push it): from or to 0 (a client denied, or one that must give all
 * back), or by at least a tenth of `granted`. Smaller moves wait for the client's next report,
 * which grants it anew; so a join or leave among many clients pushes to none of them, and a storm
 * of joins pushes to a client only as its share shrinks by tenths.
 */
export function changesMeaningfully(granted: number, next: number): boolean {
  if (next === granted) return false;
  if (granted === 0 || next === 0) return true;
  return Math.abs(next - granted) >= granted * MEANINGFUL_CHANGE;
}

/** OVER_REPORT_TOLERANCE is the part of what an assignment could have allowed that a report may exceed it by before it counts as an over-report (a tenth). */
export const OVER_REPORT_TOLERANCE = 0.1;
/** OVER_REPORT_SLACK is the number of requests a report may exceed it by besides (races at an assignment's change). */
export const OVER_REPORT_SLACK = 2;

/** Allowance is what the assignments a client held over a reporting interval let it allow: the largest grant per period, and its burst. */
export interface Allowance {
  readonly granted: number;
  readonly burstTokens: number;
}

/**
 * overReported returns true when a report of `allowed` requests over `elapsedMs` (under a second
 * counts as one) is more than the assignments its client held could have allowed, by more than
 * {@link OVER_REPORT_TOLERANCE} and {@link OVER_REPORT_SLACK}: at most its largest grant per
 * period over that time, plus a full burst. `allowance` undefined (no assignment sent since its
 * last report, so its client applied its own fallback) is never an over-report. Envoy's filter
 * enforces its assignment, so a client that keeps over-reporting ignores it. Its demand still
 * counts as reported: over the limit the shares are max-min fair, so it gains at most the water
 * level, and takes nothing from a client asking for less.
 */
export function overReported(
  allowed: number,
  allowance: Allowance | undefined,
  time: { readonly elapsedMs: number; readonly periodSeconds: number },
): boolean {
  if (allowance === undefined) return false;
  const atMost =
    (allowance.granted * Math.max(1000, time.elapsedMs)) / (time.periodSeconds * 1000) + allowance.burstTokens;
  return allowed > atMost * (1 + OVER_REPORT_TOLERANCE) + OVER_REPORT_SLACK;
}

/** expiresAtMs returns when a grant given at `nowMs` for `ttlSeconds` stops counting as outstanding. */
export function expiresAtMs(nowMs: number, ttlSeconds: number): number {
  return nowMs + ttlSeconds * 1000;
}

/** idleTooLong returns true when a bucket last had requests at `lastActiveMs` and `abandonAfterSeconds` have passed since. */
export function idleTooLong(lastActiveMs: number, nowMs: number, abandonAfterSeconds: number | undefined): boolean {
  return abandonAfterSeconds !== undefined && nowMs - lastActiveMs >= abandonAfterSeconds * 1000;
}
