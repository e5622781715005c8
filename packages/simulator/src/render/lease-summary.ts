import type { SimulationResult } from '../simulate.js';
import { formatNumber } from './format.js';

/** LEASE_HEADERS are the column titles of {@link leaseRows}. */
export const LEASE_HEADERS = [
  'leased lane',
  'nodes',
  'leaseMs',
  'share',
  'max out',
  'store ops / admitted',
  'per-request',
  'over (units)',
  'per-request over',
  'bound',
  'admitted per node',
] as const;

/** LEASE_NOTES say what the lease columns measure, under the lease table. */
export const LEASE_NOTES = [
  'store ops: calls that reached the store (lease asks, returns, per-request decisions), per admitted request; per-request: the same fleet (round trips, weights, deaths) deciding every request on the store.',
  "over: the most admitted on one key above the policy's exact answer: a bucket's burst + rate x span over any span, a fixed window's limit in each window as the store counts it (admissions half a round trip earlier).",
  'bound: what the library states a lease can over-admit (leaseOverAdmission): max out for a bucket or GCRA, 0 for a fixed window.',
] as const;

/** leaseRows returns one row of text cells per leased lane, under {@link LEASE_HEADERS} (none when no lane leases). */
export function leaseRows(result: SimulationResult): string[][] {
  return result.lanes.flatMap((lane) => {
    const r = lane.leases;
    if (r === undefined) return [];
    const dead = r.nodes.filter((n) => n.diedAtMs !== undefined).length;
    return [
      [
        lane.name,
        dead > 0 ? `${r.nodes.length} (${dead} died)` : String(r.nodes.length),
        formatNumber(r.leaseMs),
        formatNumber(r.maxOutstandingShare),
        String(r.maxOutstanding),
        formatNumber(r.storeOpsPerAdmitted, 4),
        formatNumber(r.perRequest.storeOpsPerAdmitted, 4),
        `${formatNumber(r.overAdmitted)} (${formatNumber(r.overPercent, 2)}%)`,
        formatNumber(r.perRequest.overAdmitted),
        String(r.boundUnits),
        r.nodes.map((n) => String(n.admitted)).join(' / '),
      ],
    ];
  });
}

/** leaseDeathLines returns a line per node that died: when, and the requests it took with it. */
export function leaseDeathLines(result: SimulationResult): string[] {
  return result.lanes.flatMap((lane) =>
    (lane.leases?.nodes ?? []).flatMap((n, node) =>
      n.diedAtMs === undefined
        ? []
        : [`${lane.name}: node ${node} died at ${formatNumber(n.diedAtMs)} ms with ${n.lost} request(s) in hand`],
    ),
  );
}
