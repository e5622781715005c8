/**
 * Overload benchmark (issue #19): goodput of `floodgate serve` in front of an upstream of known
 * capacity (8 slots × 20 ms = 400 requests/s, an unbounded FIFO queue, work finished for clients
 * who left), under open-loop Poisson load with a 1 s client timeout, through four lanes side by
 * side: no protection, a token bucket at the known rate (380/s), a static concurrency limit of the
 * known slots (8), and an adaptive concurrency limit told nothing.
 *
 * Scenarios: offered load 0.5x-10x of capacity (after a warm-up), the capacity cut in half in the
 * middle of a 5x overload, recovery after a 10x overload drops to 0.5x, and priority tiers at 5x.
 * It prints a table per scenario with ratios, writes the data as JSON (`--out`) and the charts as
 * SVG (`--charts`, docs/images by default on a full run). Nothing is asserted. A full run takes
 * about 5 minutes; `--quick` about 2.
 *
 *   node --conditions=floodgate-source --expose-gc --import tsx bench/overload.ts [--quick]
 *        [--out .bench-out/overload.json] [--charts docs/images|none] [--lanes none,static,...]
 *        [--max-queue N] (the concurrency lanes' wait line, default 32 waiting up to 200 ms; 0: none)
 *        [--cut slots|service] [--only sweep,halving,recovery,priorities]
 *        [--critical 0.1] (the top tier's share of the priority mix; the middle tier keeps 30%)
 *        [--unpinned] (as a user's load lands: no CPU pinning, and every second of each run counted,
 *        the first included; the default pins and leaves each run's warm-up out)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { percentile } from './overload/analyse.js';
import { goodputChart, limitPoints, stepValues, timeChart } from './overload/charts.js';
import { LANES, setMaxQueue, type Lane } from './overload/lanes.js';
import { pinnedToCpus, unpin } from './overload/processes.js';
import { halvingTable, priorityTable, recoveryTable, sweepTables } from './overload/report.js';
import { Rig } from './overload/rig.js';
import {
  FULL,
  QUICK,
  setCriticalShare,
  halving,
  priorities,
  recovery,
  sweep,
  type Context,
  type HalvingCell,
  type PriorityCell,
  type RecoveryCell,
  type SweepCell,
} from './overload/scenarios.js';
import type { Capacity } from './overload/upstream.js';

const CAPACITY: Capacity = { slots: 8, serviceMs: 20 };
const SCENARIOS = ['sweep', 'halving', 'recovery', 'priorities'] as const;
/** A p99 send lag above this means the load generator could not keep its schedule. */
const LATE_MS = 20;

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: '.bench-out/overload.json' },
    charts: { type: 'string' },
    lanes: { type: 'string' },
    cut: { type: 'string', default: 'slots' },
    only: { type: 'string' },
    'max-queue': { type: 'string' },
    critical: { type: 'string' },
    unpinned: { type: 'boolean', default: false },
  },
});
if (flags['max-queue'] !== undefined) setMaxQueue(Number(flags['max-queue']));
if (flags.critical !== undefined) setCriticalShare(Number(flags.critical));
if (flags.unpinned) unpin();
const chosen = flags.quick === true ? QUICK : FULL;
// Unpinned, nothing is left out: each run is measured from its first request.
const timings = flags.unpinned ? { ...chosen, warmupMs: 0, measureMs: chosen.warmupMs + chosen.measureMs } : chosen;
const PINNED = pinnedToCpus();
const chartsDir = flags.charts ?? (flags.quick === true ? 'none' : 'docs/images');
const halved: Capacity =
  flags.cut === 'service'
    ? { slots: CAPACITY.slots, serviceMs: CAPACITY.serviceMs * 2 }
    : { slots: CAPACITY.slots / 2, serviceMs: CAPACITY.serviceMs };
const cutLabel = flags.cut === 'service' ? 'service time 20 → 40 ms' : 'slots 8 → 4';
const only = new Set(flags.only?.split(',') ?? SCENARIOS);
const capacityPerSecond = (CAPACITY.slots * 1000) / CAPACITY.serviceMs;
const startedMs = Date.now();
const progress = (line: string): void =>
  console.error(`[${((Date.now() - startedMs) / 1000).toFixed(0).padStart(4)} s] ${line}`);

/** Starts every wanted lane's gateway once, and keeps the lanes whose config the gateway accepts. */
async function availableLanes(rig: Rig): Promise<{ lanes: Lane[]; skipped: string[] }> {
  const wanted = LANES.filter((l) => flags.lanes === undefined || flags.lanes.split(',').includes(l.id));
  const started = await Promise.allSettled(wanted.map((l) => rig.gateway(l)));
  const skipped = started.flatMap((r, i) =>
    r.status === 'rejected'
      ? [
          `${wanted[i]!.id}: ${String((r.reason as Error).message)
            .split('\n')
            .slice(0, 3)
            .join(' ')}`,
        ]
      : [],
  );
  return { lanes: wanted.filter((_, i) => started[i]!.status === 'fulfilled'), skipped };
}

function limitBetween(cell: HalvingCell, fromMs: number, toMs: number): string {
  const values = limitPoints(cell.samples)
    .filter((p) => p.atMs >= fromMs && p.atMs < toMs)
    .map((p) => p.value);
  return values.length === 0
    ? cell.lane === 'static'
      ? `${CAPACITY.slots} (fixed)`
      : '—'
    : String(
        percentile(
          values.sort((a, b) => a - b),
          0.5,
        ),
      );
}

async function writeCharts(
  dir: string,
  results: { sweep?: SweepCell[]; halving?: HalvingCell[] },
  lanes: readonly Lane[],
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  const label = (id: string): string => lanes.find((l) => l.id === id)?.short ?? id;
  if (results.sweep !== undefined) {
    const lines = lanes.map((l) => ({
      lane: l.id,
      label: l.short,
      points: results
        .sweep!.filter((c) => c.lane === l.id && c.load !== timings.unloaded)
        .map((c) => ({ load: c.load, goodput: c.goodput })),
    }));
    written.push(join(dir, 'overload-goodput.svg'));
    await writeFile(
      written.at(-1)!,
      goodputChart(lines, `Goodput under overload: upstream of ${capacityPerSecond}/s, 1 s client timeout`),
    );
  }
  const cells = results.halving ?? [];
  if (cells.length > 0) {
    const stepMs = cells[0]!.stepMs;
    const steps = cells[0]!.goodputSeries.length;
    // The upstream's slots (counted at the original service time) from the schedule: before the cut, then after.
    const slotsAt = (c: Capacity): number => (c.slots * CAPACITY.serviceMs) / c.serviceMs;
    const slotsOf = (c: HalvingCell): Float64Array =>
      stepValues(
        [
          { atMs: 0, value: slotsAt(CAPACITY) },
          { atMs: c.changeAtMs, value: slotsAt(halved) },
        ],
        stepMs,
        steps,
      );
    const limits = cells
      .filter((c) => limitPoints(c.samples).length > 0)
      .map((c) => ({ lane: c.lane, label: label(c.lane), values: stepValues(limitPoints(c.samples), stepMs, steps) }));
    if (limits.length > 0) {
      written.push(join(dir, 'overload-limit.svg'));
      await writeFile(
        written.at(-1)!,
        timeChart({
          id: 'overload-limit',
          title: `Concurrency limit through a capacity cut at 5x load (${cutLabel})`,
          yLabel: 'requests in flight',
          stepMs,
          lanes: limits,
          reference: { label: 'upstream slots (at 20 ms)', values: slotsOf(cells[0]!) },
        }),
      );
    }
    const capacityLine = slotsOf(cells[0]!).map((v) => v * (1000 / CAPACITY.serviceMs));
    written.push(join(dir, 'overload-capacity-cut.svg'));
    await writeFile(
      written.at(-1)!,
      timeChart({
        id: 'overload-capacity-cut',
        title: `Goodput through a capacity cut at 5x load (${cutLabel})`,
        yLabel: 'answered 200 within 1 s, per second',
        stepMs,
        lanes: cells.map((c) => ({ lane: c.lane, label: label(c.lane), values: Float64Array.from(c.goodputSeries) })),
        reference: { label: 'upstream capacity', values: capacityLine },
      }),
    );
  }
  return written;
}

/** Prints a warning naming the runs in which the load generator fell behind its schedule (p99 lag above {@link LATE_MS}). */
function warnIfLate(results: {
  sweep?: SweepCell[];
  halving?: HalvingCell[];
  recovery?: RecoveryCell[];
  priorities?: PriorityCell[];
}): void {
  const lags: Array<[string, number]> = [
    ...(results.sweep ?? []).map((c): [string, number] => [`sweep ${c.load}x ${c.lane}`, c.stats.lagP99Ms]),
    ...(results.halving ?? []).map((c): [string, number] => [
      `capacity cut ${c.lane}`,
      Math.max(c.before.lagP99Ms, c.after.lagP99Ms),
    ]),
    ...(results.recovery ?? []).map((c): [string, number] => [
      `recovery ${c.lane}`,
      Math.max(c.during.lagP99Ms, c.after.lagP99Ms),
    ]),
    ...(results.priorities ?? []).map((c): [string, number] => [`priorities ${c.lane}`, c.all.lagP99Ms]),
  ];
  const late = lags.filter(([, lag]) => lag > LATE_MS);
  if (late.length === 0) return;
  console.log(
    `WARNING: the load generator sent requests late (p99 above ${LATE_MS} ms) in: ${late.map(([run, lag]) => `${run} (${lag.toFixed(0)} ms)`).join(', ')}. Its latencies run from when each request was due, so the lag counts against the lane; load average now ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}.\n`,
  );
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  progress(
    `starting the upstream, the load generator and the gateways (${PINNED ? 'gateways on CPU 0, upstream and load generator on CPU 1' : 'no CPU pinning'})`,
  );
  const rig = await Rig.start(CAPACITY, progress);
  try {
    const { lanes, skipped } = await availableLanes(rig);
    for (const s of skipped) console.log(`lane skipped (its gateway did not start): ${s}`);
    const ctx: Context = { rig, lanes, timings, capacity: CAPACITY, halved };
    const results = {
      sweep: only.has('sweep') ? await sweep(ctx) : undefined,
      halving: only.has('halving') ? await halving(ctx) : undefined,
      recovery: only.has('recovery') ? await recovery(ctx) : undefined,
      priorities: only.has('priorities') ? await priorities(ctx) : undefined,
    };
    console.log(
      `\nOverload bench${flags.quick === true ? ' (--quick: short runs, rough figures)' : ''}: upstream ${CAPACITY.slots} slots × ${CAPACITY.serviceMs} ms = ${capacityPerSecond}/s, open-loop Poisson clients with a 1 s timeout, ${PINNED ? 'gateway pinned to CPU 0, upstream and load generator to CPU 1' : 'no CPU pinning'}; each run ${timings.warmupMs} ms warm-up + ${timings.measureMs} ms measured\n`,
    );
    if (results.sweep !== undefined)
      console.log(sweepTables(results.sweep, lanes, timings.unloaded, capacityPerSecond), '\n');
    if (results.halving !== undefined)
      console.log(
        halvingTable(
          results.halving,
          lanes,
          `${cutLabel} at ${timings.halving.beforeMs} ms, ${timings.halving.load}x load`,
          limitBetween,
        ),
        '\n',
      );
    if (results.recovery !== undefined)
      console.log(recoveryTable(results.recovery, lanes, capacityPerSecond, timings.recovery.windowMs), '\n');
    if (results.priorities !== undefined)
      console.log(priorityTable(results.priorities, lanes, capacityPerSecond), '\n');
    warnIfLate(results);
    const data = {
      loadAverage: { before: loadBefore, after: loadavg() },
      capacity: CAPACITY,
      capacityPerSecond,
      cut: halved,
      timings,
      clientTimeoutMs: 1000,
      pinned: PINNED,
      lanes: lanes.map((l) => ({ id: l.id, label: l.label })),
      skipped,
      ...results,
    };
    await mkdir(dirname(flags.out!), { recursive: true });
    await writeFile(
      flags.out!,
      JSON.stringify(data, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 1) +
        '\n',
    );
    console.log(`data: ${flags.out!}`);
    if (chartsDir !== 'none') console.log(`charts: ${(await writeCharts(chartsDir, results, lanes)).join(', ')}`);
  } finally {
    await rig.close();
  }
  progress('done');
}

await main();
