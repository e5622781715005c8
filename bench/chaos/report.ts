/** The chaos bench's tables, on the terminal and as the markdown bench/README.md quotes. */
import { table } from '../support/format.js';
import type { FaultFigures, FaultWindow } from './analyse.js';
import type { CostRounds } from './cost.js';
import { FLEET_CAPTION, FLEET_HEADER, fleetRows, type FleetFigures } from './fleet.js';
import type { GatewayFigures } from './gateway.js';
import { SIDES, type SideName } from './sides.js';

/** ChaosResults is everything one run measured. */
export interface ChaosResults {
  readonly faults: ReadonlyArray<{
    readonly window: FaultWindow;
    readonly figures: Readonly<Record<SideName, FaultFigures>>;
  }>;
  readonly costs: CostRounds | undefined;
  readonly gateway: readonly GatewayFigures[];
  readonly fleet: readonly FleetFigures[];
  readonly rate: number;
  readonly keys: number;
  readonly faultMs: number;
  readonly seconds: number;
  readonly node: string;
  readonly redis: string;
}

const ms = (v: number | undefined): string =>
  v === undefined || Number.isNaN(v) ? '—' : !Number.isFinite(v) ? '∞' : v < 10 ? v.toFixed(1) : String(Math.round(v));
const back = (v: number | undefined): string => (v === undefined ? 'never' : ms(v));

const FAULT_HEADER = [
  'fault',
  'side',
  'asked',
  'errors',
  'unsettled',
  'p50 ms',
  'p99 ms',
  'max ms',
  'p99 next 1 s',
  'on Redis: first',
  'all keys',
  'loop stall',
];

function faultRows(results: ChaosResults): string[][] {
  const rows: string[][] = [];
  for (const { window, figures } of results.faults) {
    for (const side of SIDES) {
      const f = figures[side];
      rows.push([
        window.name,
        side,
        String(f.asked),
        String(f.errors),
        String(f.unsettled),
        ms(f.p50Ms),
        ms(f.p99Ms),
        ms(f.maxMs),
        ms(f.p99AfterMs),
        back(f.firstRedisMs),
        back(f.allKeysRedisMs),
        ms(f.loopStallMs),
      ]);
    }
  }
  return rows;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * costRows: medians of each subject's rounds, and the ratios as the median of the rounds' own
 * ratios (each defaults round beside the fixed round next to it), with their lowest and highest:
 * on a shared machine a drift moves both rounds of a pair alike.
 */
function costRows(costs: CostRounds): string[][] {
  const cpu = (name: keyof CostRounds): number => median(costs[name].map((r) => r.cpuUsPerDecision));
  const rate = (name: keyof CostRounds): number => median(costs[name].map((r) => r.perSec));
  const pairs = (of: (r: CostRounds['fixed'][number]) => number): string => {
    const ratios = costs.defaults.map((r, i) => of(r) / of(costs.fixed[i]!));
    return `${median(ratios).toFixed(3)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
  };
  return [
    [
      'defaults',
      String(Math.round(rate('defaults'))),
      cpu('defaults').toFixed(2),
      pairs((r) => r.cpuUsPerDecision),
      pairs((r) => r.perSec),
    ],
    ['timeoutMs: 1000', String(Math.round(rate('fixed'))), cpu('fixed').toFixed(2), '1', '1'],
  ];
}
const COST_HEADER = [
  'floodgate',
  'decisions/s',
  'CPU µs/decision',
  'CPU ÷ fixed (rounds)',
  'decisions/s ÷ fixed (rounds)',
];

function gatewayRows(gateway: readonly GatewayFigures[]): string[][] {
  return gateway.map((g) => [
    g.fault,
    String(g.requests),
    String(g.serverErrors),
    String(g.timedOut + g.failed),
    ms(g.p99Ms),
    ms(g.p99AfterMs),
    back(g.backOnRedisMs),
  ]);
}
const GATEWAY_HEADER = ['fault', 'requests', '5xx', 'timed out / failed', 'p99 ms', 'p99 next 1 s', 'on Redis again'];

/** printTables writes the tables to stdout. */
export function printTables(results: ChaosResults): void {
  if (results.faults.length > 0) {
    console.log(
      `\nFaults under ${results.rate.toLocaleString('en-US')} decisions/s per side over ${results.keys} keys (latency in ms; "on Redis": ms after Redis was back)\n`,
    );
    console.log(table(FAULT_HEADER, faultRows(results), new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11])));
  }
  if (results.costs !== undefined)
    console.log(
      `\nHealthy path, 128 in flight, ${results.costs.defaults.length} alternating pairs of rounds; ratios: median of the pairs' (lowest–highest)\n\n${table(COST_HEADER, costRows(results.costs), new Set([1, 2, 3, 4]))}`,
    );
  if (results.gateway.length > 0)
    console.log(
      `\nfloodgate serve, store: { type: redis, url } (its defaults)\n\n${table(GATEWAY_HEADER, gatewayRows(results.gateway), new Set([1, 2, 3, 4, 5, 6]))}`,
    );
  if (results.fleet.length > 0)
    console.log(
      `\n${FLEET_CAPTION}\n\n${table(FLEET_HEADER, fleetRows(results.fleet), new Set([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]))}`,
    );
  console.log(`\n(${results.seconds} s; node ${results.node}, redis ${results.redis})`);
}

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** markdownOf returns the results as the markdown that bench/README.md's Chaos section quotes. */
export function markdownOf(results: ChaosResults): string {
  const parts = [
    '<!-- Written by `npm run bench:chaos`; do not edit by hand. -->',
    `Faults under an open loop of ${results.rate.toLocaleString('en-US')} decisions/s per side over ${results.keys} keys, each fault ${results.faultMs / 1000} s. Latency in ms of the decisions asked during the fault; "on Redis": ms from Redis's return until the first decision, then every key, was decided by Redis again. "loop stall": the side's event loop's longest stall during the fault (its timer late by), which delays every answer whatever the library.`,
    markdownTable(FAULT_HEADER, faultRows(results)),
  ];
  if (results.costs !== undefined)
    parts.push(
      "Healthy path: floodgate at its defaults against a fixed `timeoutMs: 1000`, 128 decisions in flight, alternating pairs of rounds (CPU of the client process); ratios: the median of the pairs' own, with the lowest and highest.",
      markdownTable(COST_HEADER, costRows(results.costs)),
    );
  if (results.gateway.length > 0)
    parts.push(
      '`floodgate serve` with `store: { type: redis, url }` (its defaults), 500 requests/s (Poisson), latency from when each request was due.',
      markdownTable(GATEWAY_HEADER, gatewayRows(results.gateway)),
    );
  if (results.fleet.length > 0) parts.push(FLEET_CAPTION, markdownTable(FLEET_HEADER, fleetRows(results.fleet)));
  parts.push(`Run: ${results.seconds} s; node ${results.node}, redis ${results.redis}.`);
  return parts.join('\n\n') + '\n';
}
