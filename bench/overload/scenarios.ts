/**
 * The overload bench's scenarios, each run through every lane with the same arrival times: a sweep
 * of offered loads, a capacity cut in the middle of an overload, recovery once an overload ends,
 * and priority tiers under overload. Each returns plain data for the tables, the JSON and the charts.
 */
import { goodputSeries, recoveredAfterMs, windowStats, type WindowStats } from './analyse.js';
import type { Lane, LaneId } from './lanes.js';
import type { TierMix } from './load.js';
import { shedReasons, type Rig, type RunResult, type Sample } from './rig.js';
import type { Capacity } from './upstream.js';

/** Timings are a run's lengths, in ms, full or quick. */
export interface Timings {
  readonly warmupMs: number;
  readonly measureMs: number;
  /** Offered loads of the sweep, as multiples of the capacity. */
  readonly loads: readonly number[];
  /** The light load whose p99 is the unloaded reference, as a multiple of the capacity. */
  readonly unloaded: number;
  readonly halving: { readonly load: number; readonly beforeMs: number; readonly afterMs: number };
  readonly recovery: {
    readonly load: number;
    readonly overloadMs: number;
    readonly base: number;
    readonly afterMs: number;
    readonly windowMs: number;
  };
  readonly priorities: { readonly load: number };
}

export const FULL: Timings = {
  warmupMs: 1000,
  measureMs: 4000,
  loads: [0.5, 1, 2, 5, 10],
  unloaded: 0.2,
  halving: { load: 5, beforeMs: 2500, afterMs: 3000 },
  recovery: { load: 10, overloadMs: 4000, base: 0.5, afterMs: 4000, windowMs: 2000 },
  priorities: { load: 5 },
};

export const QUICK: Timings = {
  warmupMs: 500,
  measureMs: 1500,
  loads: [1, 5],
  unloaded: 0.2,
  halving: { load: 5, beforeMs: 1000, afterMs: 2000 },
  recovery: { load: 10, overloadMs: 1500, base: 0.5, afterMs: 2000, windowMs: 2000 },
  priorities: { load: 5 },
};

/** The priority mix: a small top tier (10%, or `--critical`), a middle one of 30%, and bulk traffic. */
export const TIER_MIX: TierMix = {
  header: 'x-priority',
  tiers: [
    { name: 'critical', weight: 0.1 },
    { name: 'normal', weight: 0.3 },
    { name: 'bulk', weight: 0.6 },
  ],
};

/** setCriticalShare sets the top tier's share of the priority mix; bulk takes what the middle tier's 30% leaves. */
export function setCriticalShare(share: number): void {
  if (!(share > 0 && share <= 0.7)) throw new Error(`--critical must be a share above 0 and at most 0.7, got ${share}`);
  const tiers = TIER_MIX.tiers as { name: string; weight: number }[];
  tiers[0]!.weight = share;
  tiers[2]!.weight = 1 - share - tiers[1]!.weight;
}

/** RunFacts are what every cell keeps of its run besides its figures. */
export interface RunFacts {
  /** The share of a CPU the gateway used during the run (1 = one core all the time). */
  readonly gatewayCpu: number;
  /** Requests shed by the gateway's concurrency limit, by `tier/reason` (none for the other lanes). */
  readonly shedReasons: Record<string, number>;
  /** Failed requests by error. */
  readonly errors: Record<string, number>;
}

function factsOf(run: RunResult): RunFacts {
  return { gatewayCpu: run.gatewayCpu, shedReasons: shedReasons(run.samples), errors: run.records.errors };
}

/** Context is what every scenario needs. */
export interface Context {
  readonly rig: Rig;
  readonly lanes: readonly Lane[];
  readonly timings: Timings;
  readonly capacity: Capacity;
  /** The capacity after the cut in the halving scenario. */
  readonly halved: Capacity;
}

const perSecond = (c: Capacity): number => (c.slots * 1000) / c.serviceMs;
const STEP_MS = 250;

/** SweepCell is one lane at one offered load. */
export interface SweepCell extends RunFacts {
  readonly lane: LaneId;
  readonly load: number;
  readonly offeredPerSecond: number;
  readonly stats: WindowStats;
  /** Good answers a second ÷ the capacity. */
  readonly goodput: number;
}

/** sweep runs each load through each lane (lanes side by side at each load, loads ascending), the unloaded reference first; a learning lane keeps what it learned from load to load. */
export async function sweep(ctx: Context): Promise<SweepCell[]> {
  const cells: SweepCell[] = [];
  const capacityPerSecond = perSecond(ctx.capacity);
  for (const [index, load] of [ctx.timings.unloaded, ...ctx.timings.loads].entries()) {
    for (const lane of ctx.lanes) {
      const { warmupMs, measureMs } = ctx.timings;
      const gateway = await ctx.rig.gateway(lane);
      const run = await ctx.rig.run(
        gateway,
        { phases: [{ durationMs: warmupMs + measureMs, perSecond: load * capacityPerSecond }], seed: 1000 + index },
        `sweep ${load}x ${lane.id}`,
      );
      const stats = windowStats(run.records, warmupMs, warmupMs + measureMs);
      cells.push({
        lane: lane.id,
        load,
        offeredPerSecond: load * capacityPerSecond,
        stats,
        goodput: stats.goodPerSecond / capacityPerSecond,
        ...factsOf(run),
      });
    }
  }
  return cells;
}

/** HalvingCell is one lane through a capacity cut at `changeAtMs`. */
export interface HalvingCell extends RunFacts {
  readonly lane: LaneId;
  readonly changeAtMs: number;
  /** When the run's arrivals stopped; the window after the cut is [changeAtMs, endMs). */
  readonly endMs: number;
  readonly before: WindowStats;
  readonly after: WindowStats;
  /** Goodput before the cut ÷ the capacity then. */
  readonly goodputBefore: number;
  /** Goodput in the window after the cut ÷ the new capacity. */
  readonly goodputAfter: number;
  /** Good answers a second per {@link STEP_MS} bucket, by due time. */
  readonly goodputSeries: number[];
  readonly stepMs: number;
  readonly samples: Sample[];
}

/** halving runs an overload during which the upstream's capacity is cut, through a fresh gateway per learning lane. */
export async function halving(ctx: Context): Promise<HalvingCell[]> {
  const { load, beforeMs, afterMs } = ctx.timings.halving;
  const cells: HalvingCell[] = [];
  for (const lane of ctx.lanes) {
    const gateway = await ctx.rig.gateway(lane, { fresh: lane.learns });
    const endMs = beforeMs + afterMs;
    const run = await ctx.rig.run(
      gateway,
      {
        phases: [{ durationMs: endMs, perSecond: load * perSecond(ctx.capacity) }],
        seed: 2000,
        change: { atMs: beforeMs, capacity: ctx.halved },
      },
      `capacity cut ${lane.id}`,
    );
    const before = windowStats(run.records, Math.min(ctx.timings.warmupMs, beforeMs / 2), beforeMs);
    const after = windowStats(run.records, beforeMs, endMs);
    cells.push({
      lane: lane.id,
      changeAtMs: beforeMs,
      endMs,
      before,
      after,
      goodputBefore: before.goodPerSecond / perSecond(ctx.capacity),
      goodputAfter: after.goodPerSecond / perSecond(ctx.halved),
      goodputSeries: goodputSeries(run.records, STEP_MS, endMs),
      stepMs: STEP_MS,
      samples: run.samples,
      ...factsOf(run),
    });
  }
  return cells;
}

/** RecoveryCell is one lane once an overload ends and the load drops to `base`. */
export interface RecoveryCell extends RunFacts {
  readonly lane: LaneId;
  readonly during: WindowStats;
  /** The requests due in the `windowMs` after the overload ended. */
  readonly after: WindowStats;
  /** Share of those answered 200 in time. */
  readonly afterSuccess: number;
  /** From the overload's end until every 250 ms bucket had 90% answered 200 in time; undefined if never within the run. */
  readonly recoveredAfterMs: number | undefined;
  readonly goodputSeries: number[];
  readonly stepMs: number;
}

/** recovery runs an overload, then a light load, through a fresh gateway per learning lane. */
export async function recovery(ctx: Context): Promise<RecoveryCell[]> {
  const { load, overloadMs, base, afterMs, windowMs } = ctx.timings.recovery;
  const cells: RecoveryCell[] = [];
  for (const lane of ctx.lanes) {
    const gateway = await ctx.rig.gateway(lane, { fresh: lane.learns });
    const phases = [
      { durationMs: overloadMs, perSecond: load * perSecond(ctx.capacity) },
      { durationMs: afterMs, perSecond: base * perSecond(ctx.capacity) },
    ];
    const run = await ctx.rig.run(gateway, { phases, seed: 3000 }, `recovery ${lane.id}`);
    const after = windowStats(run.records, overloadMs, overloadMs + windowMs);
    cells.push({
      lane: lane.id,
      during: windowStats(run.records, Math.min(ctx.timings.warmupMs, overloadMs / 2), overloadMs),
      after,
      afterSuccess: after.sent === 0 ? NaN : after.good / after.sent,
      recoveredAfterMs: recoveredAfterMs(run.records, overloadMs, overloadMs + afterMs, {
        stepMs: STEP_MS,
        share: 0.9,
      }),
      goodputSeries: goodputSeries(run.records, STEP_MS, overloadMs + afterMs),
      stepMs: STEP_MS,
      ...factsOf(run),
    });
  }
  return cells;
}

/** PriorityCell is one lane's tiers under overload. */
export interface PriorityCell extends RunFacts {
  readonly lane: LaneId;
  readonly tiers: ReadonlyArray<{ readonly name: string; readonly stats: WindowStats }>;
  readonly all: WindowStats;
  /** Share of the top tier's requests answered 200 in time. */
  readonly topSuccess: number;
  /** Share of the lowest tier's requests shed. */
  readonly lowestShed: number;
}

/** priorities runs an overload with the tier mix; the concurrency lanes get a gateway with priority tiers. */
export async function priorities(ctx: Context): Promise<PriorityCell[]> {
  const { warmupMs, measureMs } = ctx.timings;
  const cells: PriorityCell[] = [];
  for (const lane of ctx.lanes) {
    const tiered = lane.id === 'static' || lane.id === 'adaptive';
    const gateway = await ctx.rig.gateway(lane, tiered ? { tiers: TIER_MIX } : { fresh: lane.learns });
    const run = await ctx.rig.run(
      gateway,
      {
        phases: [
          { durationMs: warmupMs + measureMs, perSecond: ctx.timings.priorities.load * perSecond(ctx.capacity) },
        ],
        seed: 4000,
        tierMix: TIER_MIX,
      },
      `priorities ${lane.id}`,
    );
    const tiers = TIER_MIX.tiers.map((t, i) => ({
      name: t.name,
      stats: windowStats(run.records, warmupMs, warmupMs + measureMs, i),
    }));
    const top = tiers[0]!.stats;
    const lowest = tiers[tiers.length - 1]!.stats;
    cells.push({
      lane: lane.id,
      tiers,
      all: windowStats(run.records, warmupMs, warmupMs + measureMs),
      topSuccess: top.good / top.sent,
      lowestShed: lowest.shed / lowest.sent,
      ...factsOf(run),
    });
  }
  return cells;
}
