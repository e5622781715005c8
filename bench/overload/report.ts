/** The overload bench's tables: one per scenario, lanes side by side, with ratios. */
import { table } from '../support/format.js';
import type { Lane, LaneId } from './lanes.js';
import type { HalvingCell, PriorityCell, RecoveryCell, SweepCell } from './scenarios.js';

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '—');
const frac = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '—');
const ms = (x: number): string => (x === Infinity ? '> 1 s' : Number.isFinite(x) ? x.toFixed(1) : '—');
const times = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '—');
const right = (n: number): Set<number> => new Set(Array.from({ length: n }, (_, i) => i + 1));

function labelOf(lanes: readonly Lane[], id: LaneId): string {
  return lanes.find((l) => l.id === id)?.label ?? id;
}

/** sweepTables returns the goodput, shedding and latency tables of the load sweep. */
export function sweepTables(
  cells: readonly SweepCell[],
  lanes: readonly Lane[],
  unloaded: number,
  capacityPerSecond: number,
): string {
  const loads = [...new Set(cells.map((c) => c.load))].filter((l) => l !== unloaded);
  const cell = (lane: LaneId, load: number): SweepCell | undefined =>
    cells.find((c) => c.lane === lane && c.load === load);
  const ids = [...new Set(cells.map((c) => c.lane))];
  const header = ['lane', ...loads.map((l) => `${l}x`)];
  const goodput = ids.map((id) => [labelOf(lanes, id), ...loads.map((l) => frac(cell(id, l)?.goodput ?? NaN))]);
  goodput.push(['ideal: min(offered, capacity)', ...loads.map((l) => frac(Math.min(l, 1)))]);
  for (const [a, b] of [
    ['adaptive', 'none'],
    ['adaptive', 'token-bucket'],
    ['adaptive', 'static'],
    ['static', 'token-bucket'],
  ] as const) {
    if (!ids.includes(a) || !ids.includes(b)) continue;
    goodput.push([
      `${a} ÷ ${b}`,
      ...loads.map((l) => times((cell(a, l)?.goodput ?? NaN) / (cell(b, l)?.goodput ?? NaN))),
    ]);
  }
  const outcomes = ids.map((id) => [
    labelOf(lanes, id),
    ...loads.map((l) => {
      const s = cell(id, l)?.stats;
      return s === undefined
        ? '—'
        : `${pct(s.shed / s.sent)} / ${pct(s.timedOut / s.sent)}${s.failed > 0 ? ` / ${s.failed} err` : ''}`;
    }),
  ]);
  const latency = ids.map((id) => {
    const base = cell(id, unloaded)?.stats.admittedP99Ms ?? NaN;
    return [
      labelOf(lanes, id),
      ms(base),
      ...loads.map((l) => {
        const p99 = cell(id, l)?.stats.admittedP99Ms ?? NaN;
        return p99 === Infinity ? '> 1 s' : `${ms(p99)} (${times(p99 / base)})`;
      }),
    ];
  });
  const shedP99 = ids.map((id) => [labelOf(lanes, id), ...loads.map((l) => ms(cell(id, l)?.stats.shedP99Ms ?? NaN))]);
  const cpu = ids.map((id) => [labelOf(lanes, id), ...loads.map((l) => pct(cell(id, l)?.gatewayCpu ?? NaN))]);
  const lag = Math.max(...cells.map((c) => c.stats.lagP99Ms));
  const errors = cells
    .filter((c) => Object.keys(c.errors).length > 0)
    .map(
      (c) =>
        `${c.lane} ${c.load}x: ${Object.entries(c.errors)
          .map(([code, n]) => `${code} ${n}`)
          .join(', ')}`,
    );
  return [
    `Goodput ÷ capacity (${capacityPerSecond}/s): requests answered 200 within 1 s, per second, over the capacity`,
    table(header, goodput, right(loads.length)),
    '',
    'Shed (429/503 from the gateway) / timed out (no answer within 1 s), share of requests sent',
    table(header, outcomes, right(loads.length)),
    '',
    `p99 latency of admitted requests in ms (timeouts counted as > 1 s), and ÷ the same lane's unloaded p99 (${unloaded}x)`,
    table(['lane', `${unloaded}x`, ...loads.map((l) => `${l}x`)], latency, right(loads.length + 1)),
    '',
    'p99 latency of shed answers, ms',
    table(header, shedP99, right(loads.length)),
    '',
    "The gateway's CPU during each run (user + system, share of its one core)",
    table(header, cpu, right(loads.length)),
    `(the load generator sent its requests within ${lag.toFixed(1)} ms of their times at p99, in the worst run)`,
    ...(errors.length === 0 ? [] : [`failed requests by error: ${errors.join('; ')}`]),
  ].join('\n');
}

/** halvingTable returns the capacity-cut table; `limitAt` reads a lane's limit from its samples. */
export function halvingTable(
  cells: readonly HalvingCell[],
  lanes: readonly Lane[],
  what: string,
  limitAt: (cell: HalvingCell, fromMs: number, toMs: number) => string,
): string {
  const rows = cells.map((c) => [
    labelOf(lanes, c.lane),
    frac(c.goodputBefore),
    frac(c.goodputAfter),
    pct(c.after.shed / c.after.sent),
    pct(c.after.timedOut / c.after.sent),
    ms(c.after.admittedP99Ms),
    limitAt(c, c.changeAtMs - 1000, c.changeAtMs),
    limitAt(c, c.endMs - 1000, c.endMs),
  ]);
  const windowS = cells[0] === undefined ? 0 : (cells[0].endMs - cells[0].changeAtMs) / 1000;
  return [
    `Capacity cut under overload (${what}): goodput before ÷ the old capacity, in the ${windowS} s after ÷ the new one`,
    table(
      ['lane', 'before', 'after', 'shed after', 'timed out after', 'p99 after ms', 'limit before', 'limit at end'],
      rows,
      right(7),
    ),
  ].join('\n');
}

/** recoveryTable returns the recovery table. */
export function recoveryTable(
  cells: readonly RecoveryCell[],
  lanes: readonly Lane[],
  capacityPerSecond: number,
  windowMs: number,
): string {
  const rows = cells.map((c) => [
    labelOf(lanes, c.lane),
    frac(c.during.goodPerSecond / capacityPerSecond),
    pct(c.afterSuccess),
    c.recoveredAfterMs === undefined ? 'not in the run' : `${(c.recoveredAfterMs / 1000).toFixed(2)} s`,
  ]);
  return [
    `Recovery: goodput during the overload ÷ capacity; share answered 200 within 1 s in the ${windowMs / 1000} s after it ended; time until every 250 ms had 90% answered`,
    table(['lane', 'during', 'after', 'recovered after'], rows, right(3)),
  ].join('\n');
}

/** priorityTable returns the priority-tier table. */
export function priorityTable(
  cells: readonly PriorityCell[],
  lanes: readonly Lane[],
  capacityPerSecond: number,
): string {
  const names = cells[0]?.tiers.map((t) => t.name) ?? [];
  const rows = cells.map((c) => [
    labelOf(lanes, c.lane),
    ...c.tiers.map((t) => `${pct(t.stats.good / t.stats.sent)} ok, ${pct(t.stats.shed / t.stats.sent)} shed`),
    frac(c.all.goodPerSecond / capacityPerSecond),
  ]);
  const reasons = cells
    .filter((c) => Object.keys(c.shedReasons).length > 0)
    .map(
      (c) =>
        `  ${c.lane}: ${Object.entries(c.shedReasons)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}`,
    );
  return [
    'Priority tiers under overload: per tier, share answered 200 within 1 s and share shed; total goodput ÷ capacity',
    table(['lane', ...names, 'goodput'], rows, right(names.length + 1)),
    ...(reasons.length === 0 ? [] : ['shed by the concurrency limit, by tier/reason (whole run):', ...reasons]),
  ].join('\n');
}
