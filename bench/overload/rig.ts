/**
 * The overload bench's rig: one upstream, one load generator and a gateway per lane, and `run`,
 * which resets the upstream, schedules a capacity change, drives one plan through one gateway and
 * samples the gateway's concurrency metrics and the upstream's queue while it runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { windowStats } from './analyse.js';
import { gatewayYaml, type KnownCapacity, type Lane } from './lanes.js';
import type { LoadPhase, LoadRecords, TierMix } from './load.js';
import { LoadChild, cpuMsOf, startGateway, startUpstreamProcess, stop, type Running } from './processes.js';
import type { Capacity, UpstreamState } from './upstream.js';

/** Sample is what the rig read during a run, `atMs` after its start. */
export interface Sample {
  readonly atMs: number;
  /** The gateway's `floodgate_concurrency*` series, by their full name with labels. */
  readonly metrics: Record<string, number>;
  readonly upstream: UpstreamState | undefined;
}

/** RunResult is one run's records and samples, and the share of a CPU the gateway used during it. */
export interface RunResult {
  readonly records: LoadRecords;
  readonly samples: Sample[];
  readonly gatewayCpu: number;
}

/** RunPlan is one run: the load, and a capacity change at `change.atMs` after the start. */
export interface RunPlan {
  readonly phases: readonly LoadPhase[];
  readonly seed: number;
  readonly tierMix?: TierMix;
  readonly change?: { readonly atMs: number; readonly capacity: Capacity };
}

const SAMPLE_EVERY_MS = 200;
const TIMEOUT_MS = 1000;
/**
 * A new gateway serves 1 s at the capacity, then 1 s at 5x, before its first run: a run should not
 * measure a process whose JIT has not yet compiled its request path (the proxying and the shedding).
 */
const WARM_UP = [
  { durationMs: 1000, load: 1 },
  { durationMs: 1000, load: 5 },
] as const;

/** Rig holds the bench's processes; `close` ends them all. */
export class Rig {
  private readonly gateways = new Map<string, Running>();
  private turn: Promise<void> = Promise.resolve();

  private constructor(
    private readonly dir: string,
    private readonly capacity: Capacity,
    private readonly upstream: Running,
    private readonly load: LoadChild,
    private readonly log: (line: string) => void,
  ) {}

  /** start launches the upstream with `capacity` and the load generator; `log` gets a line per run. */
  static async start(capacity: Capacity, log: (line: string) => void): Promise<Rig> {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-overload-'));
    const [upstream, load] = await Promise.all([
      startUpstreamProcess(capacity.slots, capacity.serviceMs),
      LoadChild.start(),
    ]);
    return new Rig(dir, capacity, upstream, load, log);
  }

  /** known is what a lane tuned to the upstream is told about it. */
  get known(): KnownCapacity {
    return { perSecond: (this.capacity.slots * 1000) / this.capacity.serviceMs, slots: this.capacity.slots };
  }

  /**
   * gateway returns the running gateway of `lane` (with `tiers` when given), starting it when
   * needed, or a fresh one when `fresh`; a new gateway serves 1 s at the capacity before it is
   * returned. It rejects when the gateway cannot start (its config is refused, for one).
   */
  async gateway(lane: Lane, options: { tiers?: TierMix; fresh?: boolean } = {}): Promise<Running> {
    const name = options.tiers === undefined ? lane.id : `${lane.id}-tiers`;
    const running = this.gateways.get(name);
    if (running !== undefined && options.fresh !== true) return running;
    await stop(running);
    this.gateways.delete(name);
    const started = await startGateway(
      name,
      this.dir,
      gatewayYaml(lane, this.upstream.port, this.known, options.tiers),
    );
    this.gateways.set(name, started);
    const phases = WARM_UP.map((p) => ({ durationMs: p.durationMs, perSecond: p.load * this.known.perSecond }));
    await this.run(
      started,
      { phases, seed: 1, ...(options.tiers === undefined ? {} : { tierMix: options.tiers }) },
      `warm-up of ${name}`,
    );
    return started;
  }

  /**
   * run resets the upstream, then drives `plan` through `gateway`, resolves once every request has
   * ended, and logs a line under `label`. Runs take turns: one starts when the last has ended.
   */
  run(gateway: Running, plan: RunPlan, label: string): Promise<RunResult> {
    const result = this.turn.then(() => this.runNow(gateway, plan, label));
    this.turn = result.then(
      () => {},
      () => {},
    );
    return result;
  }

  private async runNow(gateway: Running, plan: RunPlan, label: string): Promise<RunResult> {
    await this.resetUpstream();
    const startAtEpochMs = Date.now() + 300;
    if (plan.change !== undefined) {
      const { slots, serviceMs } = plan.change.capacity;
      await this.control(
        `capacity?slots=${slots}&serviceMs=${serviceMs}&atEpochMs=${startAtEpochMs + plan.change.atMs}`,
      );
    }
    const samples: Sample[] = [];
    const sample = async (): Promise<void> => {
      const atMs = Date.now() - startAtEpochMs;
      const [metrics, upstream] = await Promise.all([
        concurrencyMetrics(gateway.adminPort),
        this.control('state', 'GET').catch(() => undefined),
      ]);
      samples.push({ atMs, metrics, upstream });
    };
    let sampling = true;
    const sampler = (async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, Math.max(0, startAtEpochMs - Date.now())));
      while (sampling) {
        await sample();
        await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
      }
    })();
    const cpuBeforeMs = cpuMsOf(gateway.child.pid);
    const wallBeforeMs = performance.now();
    const records = await this.load.run({
      url: `http://127.0.0.1:${gateway.port}/work`,
      phases: plan.phases,
      timeoutMs: TIMEOUT_MS,
      seed: plan.seed,
      startAtEpochMs,
      ...(plan.tierMix === undefined ? {} : { tierMix: plan.tierMix }),
    });
    const gatewayCpu = (cpuMsOf(gateway.child.pid) - cpuBeforeMs) / (performance.now() - wallBeforeMs);
    sampling = false;
    await sampler;
    // One last sample once every request has ended, so counters hold the whole run.
    await sample();
    const all = windowStats(records, 0, Infinity);
    const errors = Object.entries(records.errors)
      .map(([e, n]) => `, ${e}: ${n}`)
      .join('');
    this.log(
      `${label}: ${all.sent} sent, ${all.good} good, ${all.shed} shed, ${all.timedOut} timed out, ${all.failed} failed${errors}; send lag p99 ${all.lagP99Ms.toFixed(1)} ms; gateway CPU ${(gatewayCpu * 100).toFixed(0)}%`,
    );
    return { records, samples, gatewayCpu };
  }

  /** Drops the previous run's queue, restores the capacity and waits for the slots to finish their work. */
  private async resetUpstream(): Promise<void> {
    let state = await this.control(`reset?slots=${this.capacity.slots}&serviceMs=${this.capacity.serviceMs}`);
    while (state.busy > 0) {
      await new Promise((r) => setTimeout(r, this.capacity.serviceMs));
      state = await this.control('state', 'GET');
    }
  }

  private async control(path: string, method = 'POST'): Promise<UpstreamState> {
    const response = await fetch(`http://127.0.0.1:${this.upstream.port}/_control/${path}`, {
      method,
      signal: AbortSignal.timeout(5_000),
    });
    return (await response.json()) as UpstreamState;
  }

  /** close stops every process and removes the configs. */
  async close(): Promise<void> {
    await Promise.all([...this.gateways.values()].map((g) => stop(g)));
    await Promise.all([stop(this.upstream), this.load.close()]);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * shedReasons returns how many requests each tier had shed for each reason during a run (`tier/reason`),
 * from the growth of `floodgate_concurrency_shed_total` between the first and the last sample.
 */
export function shedReasons(samples: readonly Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  const first = samples[0]?.metrics ?? {};
  for (const [key, value] of Object.entries(samples[samples.length - 1]?.metrics ?? {})) {
    if (!key.startsWith('floodgate_concurrency_shed_total{')) continue;
    const tier = /tier="([^"]*)"/.exec(key)?.[1] ?? '';
    const reason = /reason="([^"]*)"/.exec(key)?.[1] ?? '';
    const grown = value - (first[key] ?? 0);
    if (grown > 0)
      out[tier === '' ? reason : `${tier}/${reason}`] = (out[tier === '' ? reason : `${tier}/${reason}`] ?? 0) + grown;
  }
  return out;
}

/** concurrencyMetrics reads the gateway's `floodgate_concurrency*` series (none when it has no such metric or does not answer). */
async function concurrencyMetrics(adminPort: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(1_000) })
    ).text();
    for (const line of text.split('\n')) {
      if (!line.startsWith('floodgate_concurrency')) continue;
      const cut = line.lastIndexOf(' ');
      out[line.slice(0, cut)] = Number(line.slice(cut + 1));
    }
  } catch {
    // A gateway too busy to answer its metrics in time leaves a gap in the samples.
  }
  return out;
}
