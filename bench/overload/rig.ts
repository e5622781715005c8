/**
 * The overload bench's rig: one upstream, one load generator and a gateway per lane, and `run`,
 * which resets the upstream, schedules a capacity change, drives one plan through one gateway and
 * samples the gateway's concurrency metrics and the upstream's queue while it runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatewayYaml, type KnownCapacity, type Lane } from './lanes.js';
import type { LoadPhase, LoadRecords, TierMix } from './load.js';
import { LoadChild, startGateway, startUpstreamProcess, stop, type Running } from './processes.js';
import type { Capacity, UpstreamState } from './upstream.js';

/** Sample is what the rig read during a run, `atMs` after its start. */
export interface Sample {
  readonly atMs: number;
  /** The gateway's `floodgate_concurrency*` series, by their full name with labels. */
  readonly metrics: Record<string, number>;
  readonly upstream: UpstreamState | undefined;
}

/** RunResult is one run's records and samples. */
export interface RunResult {
  readonly records: LoadRecords;
  readonly samples: Sample[];
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

/** Rig holds the bench's processes; `close` ends them all. */
export class Rig {
  private readonly gateways = new Map<string, Running>();

  private constructor(
    private readonly dir: string,
    private readonly capacity: Capacity,
    private readonly upstream: Running,
    private readonly load: LoadChild,
  ) {}

  /** start launches the upstream with `capacity` and the load generator. */
  static async start(capacity: Capacity): Promise<Rig> {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-bench-overload-'));
    const [upstream, load] = await Promise.all([startUpstreamProcess(capacity.slots, capacity.serviceMs), LoadChild.start()]);
    return new Rig(dir, capacity, upstream, load);
  }

  /** known is what a lane tuned to the upstream is told about it. */
  get known(): KnownCapacity {
    return { perSecond: (this.capacity.slots * 1000) / this.capacity.serviceMs, slots: this.capacity.slots };
  }

  /**
   * gateway returns the running gateway of `lane` (with `tiers` when given), starting it when
   * needed, or a fresh one when `fresh`; it rejects when the gateway cannot start (its config is
   * refused, for one).
   */
  async gateway(lane: Lane, options: { tiers?: TierMix; fresh?: boolean } = {}): Promise<Running> {
    const name = options.tiers === undefined ? lane.id : `${lane.id}-tiers`;
    const running = this.gateways.get(name);
    if (running !== undefined && options.fresh !== true) return running;
    await stop(running);
    this.gateways.delete(name);
    const started = await startGateway(name, this.dir, gatewayYaml(lane, this.upstream.port, this.known, options.tiers));
    this.gateways.set(name, started);
    return started;
  }

  /** run resets the upstream, then drives `plan` through `gateway` and resolves once every request has ended. */
  async run(gateway: Running, plan: RunPlan): Promise<RunResult> {
    await this.resetUpstream();
    const startAtEpochMs = Date.now() + 300;
    if (plan.change !== undefined) {
      const { slots, serviceMs } = plan.change.capacity;
      await this.control(`capacity?slots=${slots}&serviceMs=${serviceMs}&atEpochMs=${startAtEpochMs + plan.change.atMs}`);
    }
    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, Math.max(0, startAtEpochMs - Date.now())));
      while (sampling) {
        const atMs = Date.now() - startAtEpochMs;
        const [metrics, upstream] = await Promise.all([concurrencyMetrics(gateway.adminPort), this.control('state', 'GET').catch(() => undefined)]);
        samples.push({ atMs, metrics, upstream });
        await new Promise((r) => setTimeout(r, SAMPLE_EVERY_MS));
      }
    })();
    const records = await this.load.run({ url: `http://127.0.0.1:${gateway.port}/work`, phases: plan.phases, timeoutMs: TIMEOUT_MS, seed: plan.seed, startAtEpochMs, ...(plan.tierMix === undefined ? {} : { tierMix: plan.tierMix }) });
    sampling = false;
    await sampler;
    return { records, samples };
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
    const response = await fetch(`http://127.0.0.1:${this.upstream.port}/_control/${path}`, { method, signal: AbortSignal.timeout(5_000) });
    return (await response.json()) as UpstreamState;
  }

  /** close stops every process and removes the configs. */
  async close(): Promise<void> {
    await Promise.all([...this.gateways.values()].map((g) => stop(g)));
    await Promise.all([stop(this.upstream), this.load.close()]);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** concurrencyMetrics reads the gateway's `floodgate_concurrency*` series (none when it has no such metric or does not answer). */
async function concurrencyMetrics(adminPort: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`, { signal: AbortSignal.timeout(1_000) })).text();
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
